// MSKernelBench baseline: MSE_loss (BF16 inputs, float loss), loss = sum (X - Y)^2 / N in float, as the benchmark's naive kernels: grid-stride partial sums atomically added into loss (zeroed by the harness), then one thread divides by N.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void MSE_loss_sum_bf16_kernel(float* loss, const __nv_bfloat16* X, const __nv_bfloat16* Y, int N) {
    float partial = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
        float d = __bfloat162float(X[i]) - __bfloat162float(Y[i]);
        partial += d * d;
    }
    if (partial != 0.0f) atomicAdd(loss, partial);
}

__global__ void MSE_loss_divide_bf16_kernel(float* loss, float n) { *loss = *loss / n; }

extern "C" void MSE_loss_bf16(float* loss, const __nv_bfloat16* X, const __nv_bfloat16* Y, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    MSE_loss_sum_bf16_kernel<<<blocks, threads>>>(loss, X, Y, N);
    MSE_loss_divide_bf16_kernel<<<1, 1>>>(loss, (float)N);
    cudaDeviceSynchronize();
}
