// MSKernelBench baseline: layer_norm (BF16), Y = (x - mean) / sqrt(var + eps) * w + b,
// computed in float. Naive: one thread per element, each recomputing the mean and the
// (two-pass, biased) variance; one rounding per output.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void layer_norm_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input,
                                       const __nv_bfloat16* weight, const __nv_bfloat16* bias, float epsilon,
                                       int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float sum = 0.0f;
        for (int j = 0; j < N; ++j) {
            sum += __bfloat162float(input[j]);
        }
        float mean = sum / N;
        float sq_sum = 0.0f;
        for (int j = 0; j < N; ++j) {
            float d = __bfloat162float(input[j]) - mean;
            sq_sum += d * d;
        }
        float var = sq_sum / N;
        float y = (__bfloat162float(input[i]) - mean) / sqrtf(var + epsilon) * __bfloat162float(weight[i]) +
                  __bfloat162float(bias[i]);
        output[i] = __float2bfloat16(y);
    }
}

extern "C" void layer_norm_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, const __nv_bfloat16* weight,
                                const __nv_bfloat16* bias, const float epsilon, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    layer_norm_bf16_kernel<<<blocks, threads>>>(output, input, weight, bias, epsilon, N);
    cudaDeviceSynchronize();
}
