// Adversarial candidate (vector_add FP32): computes C correctly, then overwrites its
// input A (casting away const).
// Expected: incorrect with inputs_unchanged = false and changed_input = "A" (the
// harness compares every input with its pristine copy after each call); C itself matches.
#include <cuda_runtime.h>

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        C[i] = A[i] + B[i];
        const_cast<float*>(A)[i] = 0.0f;
    }
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    vector_add_kernel_optimized<<<blocks, threads>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
