// MSKernelBench baseline: selu (FP32), lambda * x if x > 0 else lambda * alpha * (e^x - 1).
// Naive: one thread per element.
#include <cuda_runtime.h>

__global__ void selu_kernel(float* output, const float* input, int N, float alpha, float lambda) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = input[i];
        output[i] = x > 0.0f ? lambda * x : lambda * alpha * (expf(x) - 1.0f);
    }
}

extern "C" void selu(float* output, const float* input, const int N, float alpha, float lambda) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    selu_kernel<<<blocks, threads>>>(output, input, N, alpha, lambda);
    cudaDeviceSynchronize();
}
