// Library reference for matrix_transpose (BF16): cuBLASLt cublasLtMatrixTransform, which transposes
// CUDA_R_16BF matrices (cublasSgeam has no BF16 form). Row-major A (M x N) is described as column-major
// N x M (ld N) with transA = T; the result is column-major M x N (ld M), i.e. row-major B (N x M).
// alpha = 1, beta = 0 (B is not read). Handle, descriptor and layouts are kept between calls and
// rebuilt when the shape changes.
#include <cstdio>
#include <cstdlib>

#include <cublasLt.h>
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

struct TransposePlan {
    cublasLtHandle_t handle = nullptr;
    cublasLtMatrixTransformDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, c = nullptr;
    int m = -1, n = -1;
};

static TransposePlan& transpose_plan(int M, int N) {
    static TransposePlan plan;
    if (plan.handle == nullptr) {
        REF_CUBLAS(cublasLtCreate(&plan.handle));
        REF_CUBLAS(cublasLtMatrixTransformDescCreate(&plan.desc, CUDA_R_32F));
        const cublasOperation_t trans = CUBLAS_OP_T;
        REF_CUBLAS(cublasLtMatrixTransformDescSetAttribute(plan.desc, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, &trans,
                                                           sizeof(trans)));
    }
    if (plan.m != M || plan.n != N) {
        if (plan.a) REF_CUBLAS(cublasLtMatrixLayoutDestroy(plan.a));
        if (plan.c) REF_CUBLAS(cublasLtMatrixLayoutDestroy(plan.c));
        REF_CUBLAS(cublasLtMatrixLayoutCreate(&plan.a, CUDA_R_16BF, N, M, N));  // row-major M x N
        REF_CUBLAS(cublasLtMatrixLayoutCreate(&plan.c, CUDA_R_16BF, M, N, M));  // row-major N x M
        plan.m = M;
        plan.n = N;
    }
    return plan;
}

extern "C" void matrix_transpose_bf16_optimized(const __nv_bfloat16* A, __nv_bfloat16* B, int M, int N) {
    TransposePlan& plan = transpose_plan(M, N);
    const float one = 1.0f, zero = 0.0f;
    REF_CUBLAS(cublasLtMatrixTransform(plan.handle, plan.desc, &one, A, plan.a, &zero, nullptr, nullptr, B, plan.c,
                                       0));
    REF_CUDA(cudaDeviceSynchronize());
}
