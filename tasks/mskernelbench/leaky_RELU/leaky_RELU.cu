// MSKernelBench baseline: leaky_RELU (FP32), x if x > 0 else alpha * x. Naive: one thread
// per element.
#include <cuda_runtime.h>

__global__ void leaky_RELU_kernel(float* output, const float* input, int N, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = input[i];
        output[i] = x > 0.0f ? x : x * alpha;
    }
}

extern "C" void leaky_RELU(float* output, const float* input, const int N, float alpha) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    leaky_RELU_kernel<<<blocks, threads>>>(output, input, N, alpha);
    cudaDeviceSynchronize();
}
