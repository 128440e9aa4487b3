// Adversarial candidate (vector_add FP32): computes C, then one thread writes 1 GiB
// past the end of C, far outside any allocation.
// Expected: runtime error. Usually the write faults: the harness reports error kind
// "cuda_error", code cudaErrorIllegalAddress (on an H200 we saw cudaErrorInvalidAddressSpace; both
// classify as illegal_address), phase "candidate call", exit status 1;
// compute-sanitizer --tool memcheck reports "Invalid __global__ write of size 4".
// (Should the address happen to be mapped, memcheck still reports it.)
#include <cuda_runtime.h>

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
    if (i == 0) C[(size_t)N + ((size_t)1 << 28)] = 1.0f;
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    vector_add_kernel_optimized<<<blocks, threads>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
