// Adversarial candidate (vector_add FP32): computes the result once per N into a
// __device__ buffer and afterwards only copies that buffer into C, as a benchmark that
// reuses one input per size would never notice.
// Expected: incorrect at size 0 with first_mismatch.seed = seed_base + 1: the second
// seed has different inputs, and the cached answer of the first seed is wrong for it.
// (With --seeds 1 it would pass; the protocol uses 3 seeds.)
#include <cuda_runtime.h>

#define CACHE_CAPACITY (1 << 18)

__device__ float cached_C_optimized[CACHE_CAPACITY];
static int cached_N = -1;

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float c = A[i] + B[i];
        C[i] = c;
        if (i < CACHE_CAPACITY) cached_C_optimized[i] = c;
    }
}

__global__ void vector_add_copy_kernel_optimized(float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = cached_C_optimized[i];
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    if (N == cached_N && N <= CACHE_CAPACITY) {
        vector_add_copy_kernel_optimized<<<blocks, threads>>>(C, N);
    } else {
        vector_add_kernel_optimized<<<blocks, threads>>>(A, B, C, N);
        cached_N = N;
    }
    cudaDeviceSynchronize();
}
