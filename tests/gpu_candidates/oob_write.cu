// Adversarial candidate (vector_add FP32): the classic missing bounds check. It launches
// one extra block and lets every thread write, so 256 floats land just past the end of C.
// Expected: incorrect with out_of_bounds = "write past the end of C (byte offset 0 after
// the last element)": the harness surrounds every buffer with 64 KiB guard zones and
// checks them after each call. Such a small overrun never faults on a GPU, and
// compute-sanitizer memcheck does not report it either, because the guard zone belongs
// to the same allocation; see oob_write_far.cu for a write that memcheck reports.
#include <cuda_runtime.h>

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    C[i] = i < N ? A[i] + B[i] : 0.0f;  // no bounds check on the store
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads + 1;
    vector_add_kernel_optimized<<<blocks, threads>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
