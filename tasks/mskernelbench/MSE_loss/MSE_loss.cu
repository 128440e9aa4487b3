// MSKernelBench baseline: MSE_loss (FP32). Naive: one thread per element, each adds its
// squared difference divided by N to the scalar result with atomicAdd (float
// accumulation, order decided by the hardware).
#include <cuda_runtime.h>

__global__ void MSE_loss_kernel(float* loss, const float* X, const float* Y, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float d = X[i] - Y[i];
        atomicAdd(loss, d * d / N);
    }
}

extern "C" void MSE_loss(float* loss, const float* X, const float* Y, int N) {
    cudaMemset(loss, 0, sizeof(float));
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    MSE_loss_kernel<<<blocks, threads>>>(loss, X, Y, N);
    cudaDeviceSynchronize();
}
