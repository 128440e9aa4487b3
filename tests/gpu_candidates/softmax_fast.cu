// Faster candidate for softmax (FP32): one block of 256 threads per row instead of one
// thread per row. Each pass (max, sum of exp, normalize) is strided across the block,
// so loads are coalesced; the max and the sum are reduced with warp shuffles and one
// shared-memory step across the 8 warps.
#include <cuda_runtime.h>
#include <math.h>

#define SOFTMAX_THREADS 256
#define SOFTMAX_WARPS (SOFTMAX_THREADS / 32)

__global__ __launch_bounds__(SOFTMAX_THREADS) void softmax_kernel_optimized(float* out, const float* input, int N,
                                                                             int C) {
    __shared__ float partial[SOFTMAX_WARPS];
    const int row = blockIdx.x;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const float* x = input + (size_t)row * C;
    float* y = out + (size_t)row * C;

    // 1. row maximum
    float m = -INFINITY;
    for (int c = threadIdx.x; c < C; c += SOFTMAX_THREADS) m = fmaxf(m, x[c]);
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) partial[warp] = m;
    __syncthreads();
    m = lane < SOFTMAX_WARPS ? partial[lane] : -INFINITY;  // every warp reduces the 8 partials itself
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    __syncthreads();  // all reads of `partial` are done before it is reused

    // 2. sum of exp(x - max)
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += SOFTMAX_THREADS) s += expf(x[c] - m);
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    s = lane < SOFTMAX_WARPS ? partial[lane] : 0.0f;
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);

    // 3. normalize
    for (int c = threadIdx.x; c < C; c += SOFTMAX_THREADS) y[c] = expf(x[c] - m) / s;
}

extern "C" void softmax_optimized(float* out, const float* input, int N, int C) {
    if (N > 0) softmax_kernel_optimized<<<N, SOFTMAX_THREADS>>>(out, input, N, C);
    cudaDeviceSynchronize();
}
