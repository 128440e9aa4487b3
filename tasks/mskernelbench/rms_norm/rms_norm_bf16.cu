// MSKernelBench baseline: rms_norm (BF16), Y = X / (RMS(X) + eps) * w + b, computed
// in float. Naive: one thread per element, each recomputing the sum of squares.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void rms_norm_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input, const __nv_bfloat16* weight,
                                     const __nv_bfloat16* bias, float epsilon, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float sum_sq = 0.0f;
        for (int j = 0; j < N; ++j) {
            float x = __bfloat162float(input[j]);
            sum_sq += x * x;
        }
        float rms = sqrtf(sum_sq / N);
        float y = __bfloat162float(input[i]) / (rms + epsilon) * __bfloat162float(weight[i]) + __bfloat162float(bias[i]);
        output[i] = __float2bfloat16(y);
    }
}

extern "C" void rms_norm_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, const __nv_bfloat16* weight,
                              const __nv_bfloat16* bias, const float epsilon, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    rms_norm_bf16_kernel<<<blocks, threads>>>(output, input, weight, bias, epsilon, N);
    cudaDeviceSynchronize();
}
