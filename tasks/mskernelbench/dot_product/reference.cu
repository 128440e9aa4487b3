// Library reference for dot_product (FP32): cuBLAS cublasSdot.
// loss[0] = sum_i X[i] * Y[i], written by cuBLAS straight into the device scalar
// (CUBLAS_POINTER_MODE_DEVICE), so there is no device-to-host copy. One handle, created on
// the first call; the timed calls measure the library's reduction alone.
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

static cublasHandle_t dot_product_handle() {
    static cublasHandle_t handle = nullptr;
    if (handle == nullptr) {
        REF_CUBLAS(cublasCreate(&handle));
        REF_CUBLAS(cublasSetStream(handle, 0));
        REF_CUBLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));  // result -> device float
        REF_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    }
    return handle;
}

extern "C" void dot_product_optimized(float* loss, const float* X, const float* Y, const int N) {
    REF_CUBLAS(cublasSdot(dot_product_handle(), N, X, 1, Y, 1, loss));
    REF_CUDA(cudaDeviceSynchronize());
}
