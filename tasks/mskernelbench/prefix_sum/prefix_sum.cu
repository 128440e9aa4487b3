// MSKernelBench baseline: prefix_sum (FP32), inclusive scan, as the benchmark's naive kernel: one thread per output in blocks of 256, each summing input[0..i] from the start in float (O(N^2) work).
#include <cuda_runtime.h>

__global__ void prefix_sum_kernel(float* output, const float* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float sum = 0.0f;
        for (int j = 0; j <= i; ++j) {
            sum += input[j];
        }
        output[i] = sum;
    }
}

extern "C" void prefix_sum(float* output, const float* input, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    prefix_sum_kernel<<<blocks, threads>>>(output, input, N);
    cudaDeviceSynchronize();
}
