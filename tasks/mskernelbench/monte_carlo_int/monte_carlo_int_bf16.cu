// MSKernelBench baseline: monte_carlo_int (BF16), result[0] = (b - a) / N * sum of the samples, as the benchmark's naive kernels: a float accumulator allocated, zeroed and freed in each call, at most 1024 blocks of 256 threads with grid-stride float partial sums added by atomicAdd, then one thread scales the sum and rounds it to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void monte_carlo_int_bf16_sum_kernel(float* sum, const __nv_bfloat16* y_samples, int N) {
    float partial = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
        partial += __bfloat162float(y_samples[i]);
    }
    if (partial != 0.0f) atomicAdd(sum, partial);
}

__global__ void monte_carlo_int_bf16_finish_kernel(const float* sum, __nv_bfloat16* result, float a, float b, int N) {
    float mean = *sum / (float)N;
    *result = __float2bfloat16_rn((b - a) * mean);
}

extern "C" void monte_carlo_int_bf16(const __nv_bfloat16* y_samples, __nv_bfloat16* result, float a, float b, int N) {
    float* sum = nullptr;
    cudaMalloc(&sum, sizeof(float));
    cudaMemset(sum, 0, sizeof(float));
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    monte_carlo_int_bf16_sum_kernel<<<blocks, threads>>>(sum, y_samples, N);
    monte_carlo_int_bf16_finish_kernel<<<1, 1>>>(sum, result, a, b, N);
    cudaDeviceSynchronize();
    cudaFree(sum);
}
