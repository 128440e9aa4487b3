// MSKernelBench baseline: monte_carlo_int (FP32), result[0] = (b - a) / N * sum of the N
// samples. Naive: one thread per sample, each adds its sample to a float accumulator with
// atomicAdd (order decided by the hardware); one thread scales the sum at the end.
#include <cuda_runtime.h>

__global__ void monte_carlo_int_sum_kernel(const float* y_samples, float* sum, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        atomicAdd(sum, y_samples[i]);
    }
}

__global__ void monte_carlo_int_finish_kernel(const float* sum, float* result, float a, float b, int N) {
    result[0] = (b - a) / (float)N * sum[0];
}

// The float accumulator, allocated on the first call and kept.
static float* monte_carlo_int_sum = nullptr;

extern "C" void monte_carlo_int(const float* y_samples, float* result, float a, float b, int N) {
    if (monte_carlo_int_sum == nullptr) {
        cudaMalloc(&monte_carlo_int_sum, sizeof(float));
    }
    cudaMemset(monte_carlo_int_sum, 0, sizeof(float));
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    monte_carlo_int_sum_kernel<<<blocks, threads>>>(y_samples, monte_carlo_int_sum, N);
    monte_carlo_int_finish_kernel<<<1, 1>>>(monte_carlo_int_sum, result, a, b, N);
    cudaDeviceSynchronize();
}
