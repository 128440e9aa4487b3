// MSKernelBench baseline: reverse_array (FP32), output[i] = input[N - 1 - i]. Naive: one thread
// per output element; input is only read.
#include <cuda_runtime.h>

__global__ void reverse_array_kernel(float* output, float* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        output[i] = input[N - 1 - i];
    }
}

extern "C" void reverse_array(float* output, float* input, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    reverse_array_kernel<<<blocks, threads>>>(output, input, N);
    cudaDeviceSynchronize();
}
