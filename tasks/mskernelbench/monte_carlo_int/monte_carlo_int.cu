// MSKernelBench baseline: monte_carlo_int (FP32), result[0] = (b - a) / N * sum of the samples, as the benchmark's naive kernel: one thread per sample in blocks of 256, each adding (b - a) * y / N straight into result with atomicAdd (result is 0 when the call starts; the harness zeroes it).
#include <cuda_runtime.h>

__global__ void monte_carlo_int_kernel(const float* y_samples, float* result, float a, float b, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    atomicAdd(result, (b - a) * y_samples[i] / N);
}

extern "C" void monte_carlo_int(const float* y_samples, float* result, float a, float b, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    monte_carlo_int_kernel<<<blocks, threads>>>(y_samples, result, a, b, N);
    cudaDeviceSynchronize();
}
