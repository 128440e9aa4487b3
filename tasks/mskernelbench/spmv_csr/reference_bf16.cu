// Library reference for spmv_csr (BF16): cuSPARSE generic API, cusparseSpMV on a CSR matrix
// (CUSPARSE_SPMV_CSR_ALG1), y = A x with CUDA_R_16BF values, x and y and CUDA_R_32F compute:
// products and sums in float, one rounding of each y_r to bf16, as in the baseline.
//
// The interface gives neither nnz nor the column count, which cuSPARSE's descriptors need on the
// host. They are read once per problem (a "plan": rows and the five pointers): nnz =
// row_offsets[rows] (4 bytes copied to the host) and cols = max(col_indices) + 1 (one CUB
// reduction); the descriptors and the SpMV workspace are built at the same time. Later calls with
// the same rows and pointers reuse the plan and only launch cusparseSpMV, so the timed calls
// measure the library. This assumes that buffers reused at the same addresses with the same rows
// hold a matrix with the same nnz, which holds in this harness (nnz is fixed by the size); the
// values and the sparsity pattern themselves may change freely between calls, since no
// cusparseSpMV_preprocess is used. Workspaces grow and are kept between calls.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cub/device/device_reduce.cuh>
#include <cuda_bf16.h>
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

using value_t = __nv_bfloat16;
static constexpr cudaDataType kValueType = CUDA_R_16BF;
static constexpr cusparseSpMVAlg_t kAlg = CUSPARSE_SPMV_CSR_ALG1;

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
    int rows = -1;
    const void* values = nullptr;
    const int* col_indices = nullptr;
    const int* row_offsets = nullptr;
    const void* x = nullptr;
    void* y = nullptr;
    int64_t nnz = 0, cols = 0;
    cusparseConstSpMatDescr_t A = nullptr;
    cusparseConstDnVecDescr_t X = nullptr;
    cusparseDnVecDescr_t Y = nullptr;

    bool matches(int r, const void* v, const int* c, const int* o, const void* xx, const void* yy) const {
        return r == rows && v == values && c == col_indices && o == row_offsets && xx == x && yy == y;
    }
    void release() {
        if (A != nullptr) REF_CUSPARSE(cusparseDestroySpMat(A));
        if (X != nullptr) REF_CUSPARSE(cusparseDestroyDnVec(X));
        if (Y != nullptr) REF_CUSPARSE(cusparseDestroyDnVec(Y));
        A = nullptr;
        X = nullptr;
        Y = nullptr;
    }
};

cusparseHandle_t g_handle = nullptr;
Plan g_plan;
Scratch g_spmv_buffer, g_reduce_buffer, g_max_col;

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

}  // namespace

extern "C" void spmv_csr_bf16_optimized(int rows, const __nv_bfloat16* values, const int* col_indices,
                                        const int* row_offsets, const __nv_bfloat16* x, __nv_bfloat16* y) {
    if (rows <= 0) return;
    const float alpha = 1.0f, beta = 0.0f;  // float compute type
    if (g_handle == nullptr) {
        REF_CUSPARSE(cusparseCreate(&g_handle));
        REF_CUSPARSE(cusparseSetStream(g_handle, 0));
        REF_CUSPARSE(cusparseSetPointerMode(g_handle, CUSPARSE_POINTER_MODE_HOST));
    }
    Plan& p = g_plan;
    if (!p.matches(rows, values, col_indices, row_offsets, x, y)) {
        p.release();
        p.rows = rows;
        p.values = values;
        p.col_indices = col_indices;
        p.row_offsets = row_offsets;
        p.x = x;
        p.y = y;
        matrix_shape(rows, col_indices, row_offsets, &p.nnz, &p.cols);
        if (p.nnz > 0) {
            REF_CUSPARSE(cusparseCreateConstCsr(&p.A, rows, p.cols, p.nnz, row_offsets, col_indices, values,
                                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                                kValueType));
            REF_CUSPARSE(cusparseCreateConstDnVec(&p.X, p.cols, x, kValueType));
            REF_CUSPARSE(cusparseCreateDnVec(&p.Y, rows, y, kValueType));
            size_t bytes = 0;
            REF_CUSPARSE(cusparseSpMV_bufferSize(g_handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.A, p.X, &beta,
                                                 p.Y, CUDA_R_32F, kAlg, &bytes));
            g_spmv_buffer.reserve(bytes > 0 ? bytes : 1);
        }
    }
    if (p.nnz > 0) {
        REF_CUSPARSE(cusparseSpMV(g_handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.A, p.X, &beta, p.Y, CUDA_R_32F,
                                  kAlg, g_spmv_buffer.ptr));
    } else {
        REF_CUDA(cudaMemsetAsync(y, 0, size_t(rows) * sizeof(value_t), 0));  // an empty matrix: y = 0
    }
    REF_CUDA(cudaDeviceSynchronize());
}
