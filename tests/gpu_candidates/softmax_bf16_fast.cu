// Faster candidate for softmax (BF16): one block of 256 threads per row, float math,
// warp-shuffle reductions (same scheme as softmax_fast.cu), one rounding per output.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

#define SOFTMAX_THREADS 256
#define SOFTMAX_WARPS (SOFTMAX_THREADS / 32)

__global__ __launch_bounds__(SOFTMAX_THREADS) void softmax_bf16_kernel_optimized(__nv_bfloat16* out,
                                                                                  const __nv_bfloat16* input, int N,
                                                                                  int C) {
    __shared__ float partial[SOFTMAX_WARPS];
    const int row = blockIdx.x;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const __nv_bfloat16* x = input + (size_t)row * C;
    __nv_bfloat16* y = out + (size_t)row * C;

    float m = -INFINITY;
    for (int c = threadIdx.x; c < C; c += SOFTMAX_THREADS) m = fmaxf(m, __bfloat162float(x[c]));
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) partial[warp] = m;
    __syncthreads();
    m = lane < SOFTMAX_WARPS ? partial[lane] : -INFINITY;
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    __syncthreads();

    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += SOFTMAX_THREADS) s += expf(__bfloat162float(x[c]) - m);
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    s = lane < SOFTMAX_WARPS ? partial[lane] : 0.0f;
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);

    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < C; c += SOFTMAX_THREADS) y[c] = __float2bfloat16(expf(__bfloat162float(x[c]) - m) * inv);
}

extern "C" void softmax_bf16_optimized(__nv_bfloat16* out, const __nv_bfloat16* input, int N, int C) {
    if (N > 0) softmax_bf16_kernel_optimized<<<N, SOFTMAX_THREADS>>>(out, input, N, C);
    cudaDeviceSynchronize();
}
