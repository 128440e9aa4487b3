// vector_add (FP32): C = A + B; follows the benchmark's naive kernel: one block of 1024 threads, stride 1024.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* A, const float* B, float* C, int N) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        C[i] = A[i] + B[i];
    }
}

extern "C" void vector_add(const float* A, const float* B, float* C, int N) {
    vector_add_kernel<<<1, 1024>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
