// Library reference for spmm_csr (FP32): cuSPARSE generic API, cusparseSpMM with a CSR matrix
// and row-major dense X (cols x K) and Y (rows x K) (CUSPARSE_ORDER_ROW, leading dimension K),
// float compute, Y = A X, algorithm CUSPARSE_SPMM_CSR_ALG2 (cuSPARSE's algorithm for row-major
// dense operands; CUSPARSE_SPMM_ALG_DEFAULT if this cuSPARSE refuses it).
//
// The interface gives neither nnz nor the column count, which cuSPARSE's descriptors need on the
// host. They are read once per problem (a "plan": rows, K and the five pointers): nnz =
// row_offsets[rows] (4 bytes copied to the host) and cols = max(col_indices) + 1 (one CUB
// reduction); the descriptors and the SpMM workspace are built at the same time. Later calls with
// the same plan only launch cusparseSpMM, so the timed calls measure the library. This assumes
// that buffers reused at the same addresses with the same rows hold a matrix with the same nnz,
// which holds in this harness (nnz is fixed by the size); values and sparsity pattern may change
// freely between calls, since no cusparseSpMM_preprocess is used. Workspaces grow and are kept.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>
#include <cusparse.h>

#define REF_CUDA(call)                                                                                    \
    do {                                                                                                  \
        cudaError_t err_ = (call);                                                                        \
        if (err_ != cudaSuccess) {                                                                        \
            std::fprintf(stderr, "reference %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,            \
                         cudaGetErrorString(err_));                                                       \
            std::exit(3);                                                                                 \
        }                                                                                                 \
    } while (0)

#define REF_CUSPARSE(call)                                                                                \
    do {                                                                                                  \
        cusparseStatus_t st_ = (call);                                                                    \
        if (st_ != CUSPARSE_STATUS_SUCCESS) {                                                             \
            std::fprintf(stderr, "reference %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,            \
                         cusparseGetErrorString(st_));                                                    \
            std::exit(3);                                                                                 \
        }                                                                                                 \
    } while (0)

using value_t = float;
static constexpr cudaDataType kValueType = CUDA_R_32F;
// Preferred algorithm; if this cuSPARSE refuses it for these types and layouts, the reference
// falls back once, for good, to CUSPARSE_SPMM_ALG_DEFAULT (a note goes to stderr).
static cusparseSpMMAlg_t g_alg = CUSPARSE_SPMM_CSR_ALG2;

namespace {

// Device scratch that grows and is kept between calls.
struct Scratch {
    void* ptr = nullptr;
    size_t bytes = 0;
    void* reserve(size_t want) {
        if (want > bytes) {
            if (ptr != nullptr) REF_CUDA(cudaFree(ptr));
            REF_CUDA(cudaMalloc(&ptr, want));
            bytes = want;
        }
        return ptr;
    }
};

struct Plan {
    int rows = -1, K = -1;
    const void* values = nullptr;
    const int* col_indices = nullptr;
    const int* row_offsets = nullptr;
    const void* X = nullptr;
    void* Y = nullptr;
    int64_t nnz = 0, cols = 0;
    cusparseConstSpMatDescr_t matA = nullptr;
    cusparseConstDnMatDescr_t matX = nullptr;
    cusparseDnMatDescr_t matY = nullptr;

    bool matches(int r, int k, const void* v, const int* c, const int* o, const void* xx, const void* yy) const {
        return r == rows && k == K && v == values && c == col_indices && o == row_offsets && xx == X && yy == Y;
    }
    void release() {
        if (matA != nullptr) REF_CUSPARSE(cusparseDestroySpMat(matA));
        if (matX != nullptr) REF_CUSPARSE(cusparseDestroyDnMat(matX));
        if (matY != nullptr) REF_CUSPARSE(cusparseDestroyDnMat(matY));
        matA = nullptr;
        matX = nullptr;
        matY = nullptr;
    }
};

cusparseHandle_t g_handle = nullptr;
Plan g_plan;
Scratch g_spmm_buffer, g_reduce_buffer, g_max_col;

// nnz from row_offsets[rows]; cols = largest column index + 1 (a CUB max-reduction).
void matrix_shape(int rows, const int* col_indices, const int* row_offsets, int64_t* nnz, int64_t* cols) {
    int n = 0;
    REF_CUDA(cudaMemcpy(&n, row_offsets + rows, sizeof(int), cudaMemcpyDeviceToHost));
    *nnz = n;
    *cols = 1;
    if (n <= 0) return;
    int* d_max = static_cast<int*>(g_max_col.reserve(sizeof(int)));
    size_t bytes = 0;
    REF_CUDA(cub::DeviceReduce::Max(nullptr, bytes, col_indices, d_max, n));
    REF_CUDA(cub::DeviceReduce::Max(g_reduce_buffer.reserve(bytes), bytes, col_indices, d_max, n));
    int max_col = 0;
    REF_CUDA(cudaMemcpy(&max_col, d_max, sizeof(int), cudaMemcpyDeviceToHost));
    *cols = int64_t(max_col) + 1;
}

// Switch to CUSPARSE_SPMM_ALG_DEFAULT after the preferred algorithm was refused; false if already there.
bool fall_back(cusparseStatus_t st) {
    if (g_alg == CUSPARSE_SPMM_ALG_DEFAULT) return false;
    std::fprintf(stderr, "reference: cuSPARSE refused SpMM algorithm %d (%s); using CUSPARSE_SPMM_ALG_DEFAULT\n",
                 int(g_alg), cusparseGetErrorString(st));
    g_alg = CUSPARSE_SPMM_ALG_DEFAULT;
    return true;
}

// The SpMM workspace for the plan's descriptors and the current algorithm.
void reserve_workspace(const Plan& p, const float* alpha, const float* beta) {
    size_t bytes = 0;
    cusparseStatus_t st = cusparseSpMM_bufferSize(g_handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                  CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, p.matA, p.matX, beta,
                                                  p.matY, CUDA_R_32F, g_alg, &bytes);
    if (st != CUSPARSE_STATUS_SUCCESS && fall_back(st)) {
        st = cusparseSpMM_bufferSize(g_handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                     alpha, p.matA, p.matX, beta, p.matY, CUDA_R_32F, g_alg, &bytes);
    }
    REF_CUSPARSE(st);
    g_spmm_buffer.reserve(bytes > 0 ? bytes : 1);
}

}  // namespace

extern "C" void spmm_csr_optimized(int rows, int K, const float* values, const int* col_indices,
                                   const int* row_offsets, const float* X, float* Y) {
    if (rows <= 0 || K <= 0) return;
    const float alpha = 1.0f, beta = 0.0f;  // float compute type
    if (g_handle == nullptr) {
        REF_CUSPARSE(cusparseCreate(&g_handle));
        REF_CUSPARSE(cusparseSetStream(g_handle, 0));
        REF_CUSPARSE(cusparseSetPointerMode(g_handle, CUSPARSE_POINTER_MODE_HOST));
    }
    Plan& p = g_plan;
    if (!p.matches(rows, K, values, col_indices, row_offsets, X, Y)) {
        p.release();
        p.rows = rows;
        p.K = K;
        p.values = values;
        p.col_indices = col_indices;
        p.row_offsets = row_offsets;
        p.X = X;
        p.Y = Y;
        matrix_shape(rows, col_indices, row_offsets, &p.nnz, &p.cols);
        if (p.nnz > 0) {
            REF_CUSPARSE(cusparseCreateConstCsr(&p.matA, rows, p.cols, p.nnz, row_offsets, col_indices, values,
                                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                                kValueType));
            REF_CUSPARSE(cusparseCreateConstDnMat(&p.matX, p.cols, K, K, X, kValueType, CUSPARSE_ORDER_ROW));
            REF_CUSPARSE(cusparseCreateDnMat(&p.matY, rows, K, K, Y, kValueType, CUSPARSE_ORDER_ROW));
            reserve_workspace(p, &alpha, &beta);
        }
    }
    if (p.nnz > 0) {
        cusparseStatus_t st = cusparseSpMM(g_handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                           &alpha, p.matA, p.matX, &beta, p.matY, CUDA_R_32F, g_alg, g_spmm_buffer.ptr);
        if (st == CUSPARSE_STATUS_NOT_SUPPORTED && fall_back(st)) {
            reserve_workspace(p, &alpha, &beta);
            st = cusparseSpMM(g_handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                              p.matA, p.matX, &beta, p.matY, CUDA_R_32F, g_alg, g_spmm_buffer.ptr);
        }
        REF_CUSPARSE(st);
    } else {
        REF_CUDA(cudaMemsetAsync(Y, 0, size_t(rows) * size_t(K) * sizeof(value_t), 0));  // an empty matrix: Y = 0
    }
    REF_CUDA(cudaDeviceSynchronize());
}
