// Tolerance test (dot_product BF16): each thread accumulates 256 products in a bf16
// register (rounding after every add) before one atomicAdd per thread. Fewer atomics,
// but bf16 accumulation loses about 3 significant digits.
// Expected: incorrect: at N = 2^16 the result is off by roughly 1 (atol 0.1), far
// more at N = 2^20. The float result and float accumulation are part of the contract.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define PER_THREAD 256

__global__ void dot_product_bf16_kernel_optimized(float* loss, const __nv_bfloat16* X, const __nv_bfloat16* Y, int N) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int start = t * PER_THREAD;
    if (start >= N) return;
    int end = start + PER_THREAD < N ? start + PER_THREAD : N;
    __nv_bfloat16 acc = __float2bfloat16(0.0f);
    for (int i = start; i < end; ++i) {
        acc = __float2bfloat16(__bfloat162float(acc) + __bfloat162float(X[i]) * __bfloat162float(Y[i]));
    }
    atomicAdd(loss, __bfloat162float(acc));
}

extern "C" void dot_product_bf16_optimized(float* loss, const __nv_bfloat16* X, const __nv_bfloat16* Y, const int N) {
    cudaMemset(loss, 0, sizeof(float));
    int threads = 256;
    int workers = (N + PER_THREAD - 1) / PER_THREAD;
    int blocks = (workers + threads - 1) / threads;
    if (blocks > 0) dot_product_bf16_kernel_optimized<<<blocks, threads>>>(loss, X, Y, N);
    cudaDeviceSynchronize();
}
