// Adversarial candidate (vector_add FP32): hard-coded for the first benchmark size.
// N == 1024 gets one block of 1024 threads (correct); other sizes reuse that launch
// shape "because the benchmark starts at 1024", so only C[0..1024) is written.
// Expected: correct at size 0 (N = 1024), incorrect from size 1 on (N = 4096):
// first_mismatch at index 1024. Correctness is required at every size.
#include <cuda_runtime.h>

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    if (N == 1024) {
        vector_add_kernel_optimized<<<1, 1024>>>(A, B, C, N);
    } else {
        vector_add_kernel_optimized<<<1, 1024>>>(A, B, C, N < 1024 ? N : 1024);
    }
    cudaDeviceSynchronize();
}
