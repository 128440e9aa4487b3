// MSKernelBench baseline: dot_product (BF16 inputs, float result). Naive: one thread
// per element, each adds its product (exact in float) to the result with atomicAdd.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void dot_product_bf16_kernel(float* loss, const __nv_bfloat16* X, const __nv_bfloat16* Y, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        atomicAdd(loss, __bfloat162float(X[i]) * __bfloat162float(Y[i]));
    }
}

extern "C" void dot_product_bf16(float* loss, const __nv_bfloat16* X, const __nv_bfloat16* Y, const int N) {
    cudaMemset(loss, 0, sizeof(float));
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    dot_product_bf16_kernel<<<blocks, threads>>>(loss, X, Y, N);
    cudaDeviceSynchronize();
}
