// MSKernelBench baseline: cross_entropy_loss (BF16 inputs, float loss), loss = -sum over Y[i] != 0 of Y[i] log(max(X[i], 1e-8)) in float, as the benchmark's naive kernel: grid-stride partial sums atomically added into loss (zeroed by the harness).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

__global__ void cross_entropy_loss_bf16_kernel(float* loss, const __nv_bfloat16* X, const __nv_bfloat16* Y, int C) {
    float partial = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < C; i += blockDim.x * gridDim.x) {
        float y = __bfloat162float(Y[i]);
        if (y != 0.0f) partial -= y * logf(fmaxf(__bfloat162float(X[i]), 1e-8f));
    }
    if (partial != 0.0f) atomicAdd(loss, partial);
}

extern "C" void cross_entropy_loss_bf16(float* loss, const __nv_bfloat16* X, const __nv_bfloat16* Y, const int C) {
    int threads = 256;
    int blocks = (C + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    cross_entropy_loss_bf16_kernel<<<blocks, threads>>>(loss, X, Y, C);
    cudaDeviceSynchronize();
}
