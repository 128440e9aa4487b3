// MSKernelBench baseline: cross_entropy_loss (FP32), loss = -sum over Y[i] != 0 of Y[i] log(max(X[i], 1e-8)), as the benchmark's naive kernel: grid-stride partial sums atomically added into loss (zeroed by the harness).
#include <cuda_runtime.h>
#include <math.h>

__global__ void cross_entropy_loss_kernel(float* loss, const float* X, const float* Y, int C) {
    float partial = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < C; i += blockDim.x * gridDim.x) {
        float y = Y[i];
        if (y != 0.0f) partial -= y * logf(fmaxf(X[i], 1e-8f));
    }
    if (partial != 0.0f) atomicAdd(loss, partial);
}

extern "C" void cross_entropy_loss(float* loss, const float* X, const float* Y, const int C) {
    int threads = 256;
    int blocks = (C + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    cross_entropy_loss_kernel<<<blocks, threads>>>(loss, X, Y, C);
    cudaDeviceSynchronize();
}
