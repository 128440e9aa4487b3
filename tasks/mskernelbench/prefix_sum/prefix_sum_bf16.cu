// MSKernelBench baseline: prefix_sum (BF16), inclusive scan, as the benchmark's naive kernel: one thread per output in blocks of 256, each summing input[0..i] from the start in float (O(N^2) work), one rounding to bf16.
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
