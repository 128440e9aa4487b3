// MSKernelBench baseline: softmax (BF16) over each row of x(N,C), row-major.
// Naive: one thread per row, three passes in float, one rounding per output.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

__global__ void softmax_bf16_kernel(__nv_bfloat16* out, const __nv_bfloat16* input, int N, int C) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N) {
        const __nv_bfloat16* x = input + (size_t)row * C;
        __nv_bfloat16* y = out + (size_t)row * C;
        float max_val = -INFINITY;
        for (int c = 0; c < C; ++c) {
            max_val = fmaxf(max_val, __bfloat162float(x[c]));
        }
        float sum = 0.0f;
        for (int c = 0; c < C; ++c) {
            sum += expf(__bfloat162float(x[c]) - max_val);
        }
        for (int c = 0; c < C; ++c) {
            y[c] = __float2bfloat16(expf(__bfloat162float(x[c]) - max_val) / sum);
        }
    }
}

extern "C" void softmax_bf16(__nv_bfloat16* out, const __nv_bfloat16* input, int N, int C) {
    int threads = 128;
    int blocks = (N + threads - 1) / threads;
    softmax_bf16_kernel<<<blocks, threads>>>(out, input, N, C);
    cudaDeviceSynchronize();
}
