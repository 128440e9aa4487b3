// MSKernelBench baseline: row_tanh (FP32), tanh of every element. Naive: one thread per element.
#include <cuda_runtime.h>

__global__ void row_tanh_kernel(float* out, const float* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        out[i] = tanhf(input[i]);
    }
}

extern "C" void row_tanh(float* out, const float* input, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    row_tanh_kernel<<<blocks, threads>>>(out, input, N);
    cudaDeviceSynchronize();
}
