// MSKernelBench baseline: softmax (BF16) of each row of x(N,C), as the benchmark's naive kernel: one block of 1024 threads, one thread per row; exp is stored in out as bf16, then scaled by 1/sum in place (two roundings).
#include <cfloat>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void softmax_bf16_kernel(__nv_bfloat16* out, const __nv_bfloat16* input, int N, int C) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N) {
        const __nv_bfloat16* x = input + (size_t)row * C;
        __nv_bfloat16* y = out + (size_t)row * C;
        float row_max = -FLT_MAX;
        for (int c = 0; c < C; ++c) {
            float v = __bfloat162float(x[c]);
            if (v > row_max) row_max = v;
        }
        float sum = 0.0f;  // of the unrounded exponentials
        for (int c = 0; c < C; ++c) {
            float e = expf(__bfloat162float(x[c]) - row_max);
            y[c] = __float2bfloat16(e);
            sum += e;
        }
        float inv_sum = 1.0f / sum;
        for (int c = 0; c < C; ++c) {
            y[c] = __float2bfloat16(__bfloat162float(y[c]) * inv_sum);
        }
    }
}

extern "C" void softmax_bf16(__nv_bfloat16* out, const __nv_bfloat16* input, int N, int C) {
    softmax_bf16_kernel<<<1, 1024>>>(out, input, N, C);
    cudaDeviceSynchronize();
}
