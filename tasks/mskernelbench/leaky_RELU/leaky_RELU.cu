// MSKernelBench baseline: leaky_RELU (FP32), alpha * x for x < 0, else x, as the benchmark's naive kernel: one block of 1024 threads striding over the array.
#include <cuda_runtime.h>

__global__ void leaky_RELU_kernel(float* output, const float* input, int N, float alpha) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        float x = input[i];
        output[i] = x < 0.0f ? alpha * x : x;
    }
}

extern "C" void leaky_RELU(float* output, const float* input, const int N, float alpha) {
    leaky_RELU_kernel<<<1, 1024>>>(output, input, N, alpha);
    cudaDeviceSynchronize();
}
