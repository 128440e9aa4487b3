// MSKernelBench baseline: sigmoid (FP32), 1 / (1 + e^-x). Naive: one thread per element.
#include <cuda_runtime.h>

__global__ void sigmoid_kernel(float* out, const float* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        out[i] = 1.0f / (1.0f + expf(-input[i]));
    }
}

extern "C" void sigmoid(float* out, const float* input, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    sigmoid_kernel<<<blocks, threads>>>(out, input, N);
    cudaDeviceSynchronize();
}
