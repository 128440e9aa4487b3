// Faster (or at least as fast) candidate for vector_add (FP32): a grid-stride loop with
// 16-byte loads and stores when all three pointers are 16-byte aligned, scalar
// otherwise. The control case for the adversarial vector_add candidates.
#include <cuda_runtime.h>
#include <stdint.h>

#define VA_THREADS 256

// Caller guarantees 16-byte alignment of A, B and C.
__global__ void vector_add_vec4_kernel_optimized(const float* __restrict__ A, const float* __restrict__ B,
                                                 float* __restrict__ C, int N) {
    const float4* A4 = reinterpret_cast<const float4*>(A);
    const float4* B4 = reinterpret_cast<const float4*>(B);
    float4* C4 = reinterpret_cast<float4*>(C);
    const int n4 = N / 4;
    const int stride = gridDim.x * blockDim.x;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = tid; i < n4; i += stride) {
        const float4 a = A4[i], b = B4[i];
        C4[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
    const int tail = n4 * 4 + tid;  // the last N % 4 elements, one thread each
    if (tail < N) C[tail] = A[tail] + B[tail];
}

__global__ void vector_add_scalar_kernel_optimized(const float* __restrict__ A, const float* __restrict__ B,
                                                   float* __restrict__ C, int N) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) C[i] = A[i] + B[i];
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    int blocks = (N / 4 + VA_THREADS - 1) / VA_THREADS;
    if (blocks < 1) blocks = 1;
    if (blocks > 4096) blocks = 4096;
    const bool aligned = (((uintptr_t)A | (uintptr_t)B | (uintptr_t)C) % 16) == 0;
    if (aligned) {
        vector_add_vec4_kernel_optimized<<<blocks, VA_THREADS>>>(A, B, C, N);
    } else {
        vector_add_scalar_kernel_optimized<<<blocks, VA_THREADS>>>(A, B, C, N);
    }
    cudaDeviceSynchronize();
}
