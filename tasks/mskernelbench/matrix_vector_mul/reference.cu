// Library reference for matrix_vector_mul (FP32): cuBLAS cublasSgemv.
// Row-major A(M,N) is the column-major matrix A^T(N,M) with leading dimension N, so
// y = A x is gemv with CUBLAS_OP_T on that (N x M) matrix. FP32 arithmetic throughout
// (CUBLAS_DEFAULT_MATH on the handle: no TF32). One handle, created on the first call.
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

static cublasHandle_t matrix_vector_mul_handle() {
    static cublasHandle_t handle = nullptr;
    if (handle == nullptr) {
        REF_CUBLAS(cublasCreate(&handle));
        REF_CUBLAS(cublasSetStream(handle, 0));
        REF_CUBLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
        REF_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    }
    return handle;
}

extern "C" void matrix_vector_mul_optimized(const float* A, const float* x, float* y, int M, int N) {
    const float one = 1.0f, zero = 0.0f;
    // column-major A^T is (N x M, ld N); y(M) = (A^T)^T x
    REF_CUBLAS(cublasSgemv(matrix_vector_mul_handle(), CUBLAS_OP_T, N, M, &one, A, N, x, 1, &zero, y, 1));
    REF_CUDA(cudaDeviceSynchronize());
}
