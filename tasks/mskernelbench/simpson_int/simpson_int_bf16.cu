// MSKernelBench baseline: simpson_int (BF16 samples, BF16 result), result[0] = h / 3 *
// sum_i w_i * y[i] with h = (b - a) / (N - 1) and Table 7's weights: w_0 = w_{N-1} = 1, 4 on
// odd i <= N-2, 2 on even 2 <= i <= N-3 (so 0 on i = N-2 when N is even). Naive: one thread
// per sample, each adds its weighted sample (as float) to a float accumulator with atomicAdd;
// one thread scales the sum by h / 3 and rounds it once to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void simpson_int_bf16_sum_kernel(const __nv_bfloat16* y_samples, float* sum, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float w;
        if (i == 0 || i == N - 1) {
            w = 1.0f;
        } else if (i % 2 == 1) {
            w = 4.0f;
        } else if (i <= N - 3) {
            w = 2.0f;
        } else {
            w = 0.0f;  // i = N - 2 with N even
        }
        if (w != 0.0f) {
            atomicAdd(sum, w * __bfloat162float(y_samples[i]));
        }
    }
}

__global__ void simpson_int_bf16_finish_kernel(const float* sum, __nv_bfloat16* result, float a, float b, int N) {
    float h = (b - a) / (float)(N - 1);
    result[0] = __float2bfloat16(h / 3.0f * sum[0]);
}

// The float accumulator, allocated on the first call and kept.
static float* simpson_int_bf16_sum = nullptr;

extern "C" void simpson_int_bf16(const __nv_bfloat16* y_samples, __nv_bfloat16* result, float a, float b, int N) {
    if (simpson_int_bf16_sum == nullptr) {
        cudaMalloc(&simpson_int_bf16_sum, sizeof(float));
    }
    cudaMemset(simpson_int_bf16_sum, 0, sizeof(float));
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    simpson_int_bf16_sum_kernel<<<blocks, threads>>>(y_samples, simpson_int_bf16_sum, N);
    simpson_int_bf16_finish_kernel<<<1, 1>>>(simpson_int_bf16_sum, result, a, b, N);
    cudaDeviceSynchronize();
}
