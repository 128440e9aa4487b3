// MSKernelBench baseline: prefix_sum (BF16), inclusive scan output[i] = sum of
// input[0..i]. Naive: each thread sums its prefix on its own, accumulating in float
// and rounding once to bf16, so the work is O(N^2).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void prefix_sum_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float sum = 0.0f;
        for (int j = 0; j <= i; ++j) {
            sum += __bfloat162float(input[j]);
        }
        output[i] = __float2bfloat16(sum);
    }
}

extern "C" void prefix_sum_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    prefix_sum_bf16_kernel<<<blocks, threads>>>(output, input, N);
    cudaDeviceSynchronize();
}
