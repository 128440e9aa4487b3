// MSKernelBench baseline: monte_carlo_int (BF16 samples, BF16 result), result[0] = (b - a) / N
// * sum of the N samples. Naive: one thread per sample, each adds its sample (as float) to a
// float accumulator with atomicAdd; one thread scales the sum and rounds it once to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void monte_carlo_int_bf16_sum_kernel(const __nv_bfloat16* y_samples, float* sum, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        atomicAdd(sum, __bfloat162float(y_samples[i]));
    }
}

__global__ void monte_carlo_int_bf16_finish_kernel(const float* sum, __nv_bfloat16* result, float a, float b, int N) {
    result[0] = __float2bfloat16((b - a) / (float)N * sum[0]);
}

// The float accumulator, allocated on the first call and kept.
static float* monte_carlo_int_bf16_sum = nullptr;

extern "C" void monte_carlo_int_bf16(const __nv_bfloat16* y_samples, __nv_bfloat16* result, float a, float b, int N) {
    if (monte_carlo_int_bf16_sum == nullptr) {
        cudaMalloc(&monte_carlo_int_bf16_sum, sizeof(float));
    }
    cudaMemset(monte_carlo_int_bf16_sum, 0, sizeof(float));
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    monte_carlo_int_bf16_sum_kernel<<<blocks, threads>>>(y_samples, monte_carlo_int_bf16_sum, N);
    monte_carlo_int_bf16_finish_kernel<<<1, 1>>>(monte_carlo_int_bf16_sum, result, a, b, N);
    cudaDeviceSynchronize();
}
