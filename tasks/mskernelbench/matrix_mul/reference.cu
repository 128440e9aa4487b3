// Library reference for matrix_mul (FP32): cuBLAS cublasSgemm.
// Row-major C(M,N) = A(M,K) B(K,N) is computed as the column-major product
// C^T(N,M) = B^T(N,K) A^T(K,M): a row-major matrix is its column-major transpose, so no data
// moves. FP32 stays FP32: the handle is explicitly in CUBLAS_DEFAULT_MATH, in which cublasSgemm
// runs FP32 FFMA kernels (TF32 tensor cores only with CUBLAS_TF32_TENSOR_OP_MATH, BF16x9
// emulation only with CUBLAS_FP32_EMULATED_BF16X9_MATH, and that exists on Blackwell only).
// CUBLAS_PEDANTIC_MATH would also pin FP32 but may pick slower kernels. One handle, created on
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

static cublasHandle_t matrix_mul_handle() {
    static cublasHandle_t handle = nullptr;
    if (handle == nullptr) {
        REF_CUBLAS(cublasCreate(&handle));
        REF_CUBLAS(cublasSetStream(handle, 0));
        REF_CUBLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
        REF_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    }
    return handle;
}

extern "C" void matrix_mul_optimized(const float* A, const float* B, float* C, int M, int N, int K) {
    const float one = 1.0f, zero = 0.0f;
    // column-major: C^T (N x M, ld N) = B^T (N x K, ld N) * A^T (K x M, ld K)
    REF_CUBLAS(cublasSgemm(matrix_mul_handle(), CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N));
    REF_CUDA(cudaDeviceSynchronize());
}
