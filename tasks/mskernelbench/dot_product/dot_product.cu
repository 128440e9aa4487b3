// MSKernelBench baseline: dot_product (FP32). Naive: one thread per element, each
// adds its product to the scalar result with atomicAdd (float accumulation, order
// decided by the hardware).
#include <cuda_runtime.h>

__global__ void dot_product_kernel(float* loss, const float* X, const float* Y, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        atomicAdd(loss, X[i] * Y[i]);
    }
}

extern "C" void dot_product(float* loss, const float* X, const float* Y, const int N) {
    cudaMemset(loss, 0, sizeof(float));
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    dot_product_kernel<<<blocks, threads>>>(loss, X, Y, N);
    cudaDeviceSynchronize();
}
