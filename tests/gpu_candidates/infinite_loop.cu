// Adversarial candidate (vector_add FP32): every thread spins on a flag nobody sets.
// Expected: timeout. The runner kills the process group at its wall-clock limit; the
// JSON the harness left behind is its last checkpoint: error kind "incomplete", phase
// "candidate call", size_index 0, seed seed_base.
#include <cuda_runtime.h>

__device__ volatile int release_flag_optimized = 0;  // volatile: the loop cannot be optimized away

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    while (release_flag_optimized == 0) {
    }
    if (i < N) C[i] = A[i] + B[i];
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    vector_add_kernel_optimized<<<blocks, threads>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
