// MSKernelBench baseline: MSE_loss (BF16 inputs, float result). Naive: one thread per
// element, each adds its squared difference (computed in float) divided by N to the
// result with atomicAdd.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void MSE_loss_bf16_kernel(float* loss, const __nv_bfloat16* X, const __nv_bfloat16* Y, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float d = __bfloat162float(X[i]) - __bfloat162float(Y[i]);
        atomicAdd(loss, d * d / N);
    }
}

extern "C" void MSE_loss_bf16(float* loss, const __nv_bfloat16* X, const __nv_bfloat16* Y, const int N) {
    cudaMemset(loss, 0, sizeof(float));
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    MSE_loss_bf16_kernel<<<blocks, threads>>>(loss, X, Y, N);
    cudaDeviceSynchronize();
}
