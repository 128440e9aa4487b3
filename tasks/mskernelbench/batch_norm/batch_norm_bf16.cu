// MSKernelBench baseline: batch_norm (BF16) over the columns of x(N,C), row-major,
// computed in float. Naive: one thread per element, each recomputing the mean and the
// (two-pass, biased) variance of its column; one rounding per output.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void batch_norm_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input,
                                       const __nv_bfloat16* gamma, const __nv_bfloat16* beta, float epsilon, int N,
                                       int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N * C) {
        int j = idx % C;
        float sum = 0.0f;
        for (int i = 0; i < N; ++i) {
            sum += __bfloat162float(input[i * C + j]);
        }
        float mean = sum / N;
        float sq_sum = 0.0f;
        for (int i = 0; i < N; ++i) {
            float d = __bfloat162float(input[i * C + j]) - mean;
            sq_sum += d * d;
        }
        float var = sq_sum / N;
        float y = (__bfloat162float(input[idx]) - mean) / sqrtf(var + epsilon) * __bfloat162float(gamma[j]) +
                  __bfloat162float(beta[j]);
        output[idx] = __float2bfloat16(y);
    }
}

extern "C" void batch_norm_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, const __nv_bfloat16* gamma,
                                const __nv_bfloat16* beta, const float epsilon, const int N, const int C) {
    int threads = 256;
    int blocks = (N * C + threads - 1) / threads;
    batch_norm_bf16_kernel<<<blocks, threads>>>(output, input, gamma, beta, epsilon, N, C);
    cudaDeviceSynchronize();
}
