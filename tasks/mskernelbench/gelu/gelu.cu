// MSKernelBench baseline: gelu (FP32), exact form x * Phi(x) with erf. Naive: one
// thread per element.
#include <cuda_runtime.h>

__global__ void gelu_kernel(float* output, const float* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = input[i];
        output[i] = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    }
}

extern "C" void gelu(float* output, const float* input, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    gelu_kernel<<<blocks, threads>>>(output, input, N);
    cudaDeviceSynchronize();
}
