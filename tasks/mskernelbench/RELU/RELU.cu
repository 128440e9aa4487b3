// MSKernelBench baseline: RELU (FP32). Naive: one thread per element.
#include <cuda_runtime.h>

__global__ void RELU_kernel(float* output, const float* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = input[i];
        output[i] = x > 0.0f ? x : 0.0f;
    }
}

extern "C" void RELU(float* output, const float* input, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    RELU_kernel<<<blocks, threads>>>(output, input, N);
    cudaDeviceSynchronize();
}
