// MSKernelBench baseline: elu (FP32), x if x > 0 else alpha * (e^x - 1). Naive: one thread
// per element.
#include <cuda_runtime.h>

__global__ void elu_kernel(float* output, const float* input, int N, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = input[i];
        output[i] = x > 0.0f ? x : alpha * (expf(x) - 1.0f);
    }
}

extern "C" void elu(float* output, const float* input, const int N, float alpha) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    elu_kernel<<<blocks, threads>>>(output, input, N, alpha);
    cudaDeviceSynchronize();
}
