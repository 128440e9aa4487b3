// Library reference for matrix_transpose (FP32): cuBLAS cublasSgeam, C = alpha * op(A) + beta * op(B)
// with op(A) = A^T, alpha = 1, beta = 0. Row-major A (M x N) is column-major N x M with lda = N; the
// row-major B (N x M) is column-major M x N with ldc = M. beta = 0 with B passed as C (ldb = ldc,
// transb = N) is the in-place form cuBLAS documents, so nothing else is read. One handle, created on
// the first call.
#include <cstdio>
#include <cstdlib>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define REF_CUDA(call)                                                                                    \
    do {                                                                                                  \
        cudaError_t err_ = (call);                                                                        \
        if (err_ != cudaSuccess) {                                                                        \
            std::fprintf(stderr, "reference %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,            \
                         cudaGetErrorString(err_));                                                       \
            std::exit(3);                                                                                 \
        }                                                                                                 \
    } while (0)

#define REF_CUBLAS(call)                                                                                  \
    do {                                                                                                  \
        cublasStatus_t st_ = (call);                                                                      \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                               \
            std::fprintf(stderr, "reference %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,            \
                         cublasGetStatusString(st_));                                                     \
            std::exit(3);                                                                                 \
        }                                                                                                 \
    } while (0)

static cublasHandle_t transpose_handle() {
    static cublasHandle_t handle = nullptr;
    if (handle == nullptr) {
        REF_CUBLAS(cublasCreate(&handle));
        REF_CUBLAS(cublasSetStream(handle, 0));
    }
    return handle;
}

extern "C" void matrix_transpose_optimized(const float* A, float* B, int M, int N) {
    const float one = 1.0f, zero = 0.0f;
    REF_CUBLAS(cublasSgeam(transpose_handle(), CUBLAS_OP_T, CUBLAS_OP_N, M, N, &one, A, N, &zero, B, M, B, M));
    REF_CUDA(cudaDeviceSynchronize());
}
