// Adversarial candidate (vector_add FP32): writes only the first half of C.
// Expected: incorrect, first_mismatch at index N/2 (the poisoned NaN), N/2 mismatches.
#include <cuda_runtime.h>

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N / 2) C[i] = A[i] + B[i];
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    int threads = 256;
    int blocks = (N / 2 + threads - 1) / threads;
    if (blocks > 0) vector_add_kernel_optimized<<<blocks, threads>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
