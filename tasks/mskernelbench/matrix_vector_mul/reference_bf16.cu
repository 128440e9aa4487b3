// Library reference for matrix_vector_mul (BF16): cuBLAS cublasGemmEx with n = 1, CUDA_R_16BF
// A, x and y and CUBLAS_COMPUTE_32F (float accumulation, one rounding of each y_i to bf16).
// Row-major A(M,N) is the column-major A^T(N,M) with leading dimension N, so
// y(M x 1) = op(A^T)(M x N) x(N x 1) with CUBLAS_OP_T. The handle sets
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, so split-K partial sums stay in float.
// One handle, created on the first call.
#include <cstdio>
#include <cstdlib>

#include <cublas_v2.h>
#include <cuda_bf16.h>
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

static cublasHandle_t matrix_vector_mul_bf16_handle() {
    static cublasHandle_t handle = nullptr;
    if (handle == nullptr) {
        REF_CUBLAS(cublasCreate(&handle));
        REF_CUBLAS(cublasSetStream(handle, 0));
        REF_CUBLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
        REF_CUBLAS(cublasSetMathMode(
            handle, cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    }
    return handle;
}

extern "C" void matrix_vector_mul_bf16_optimized(const __nv_bfloat16* A, const __nv_bfloat16* x, __nv_bfloat16* y,
                                                 int M, int N) {
    const float one = 1.0f, zero = 0.0f;
    // y (M x 1, ld M) = (A^T)^T (M x N; A^T is N x M, ld N) * x (N x 1, ld N)
    REF_CUBLAS(cublasGemmEx(matrix_vector_mul_bf16_handle(), CUBLAS_OP_T, CUBLAS_OP_N, M, 1, N, &one, A, CUDA_R_16BF,
                            N, x, CUDA_R_16BF, N, &zero, y, CUDA_R_16BF, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    REF_CUDA(cudaDeviceSynchronize());
}
