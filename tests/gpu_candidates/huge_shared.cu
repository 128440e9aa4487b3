// Adversarial candidate (vector_add FP32): asks for 1 MiB of dynamic shared memory per
// block (an H100 allows at most 227 KiB) and never checks the launch.
// Expected: runtime error. The launch fails, and the harness reports error kind
// "cuda_error", code cudaErrorInvalidValue ("invalid argument"), phase "candidate call"
// (the launch error is read with cudaGetLastError right after the call), exit status 1.
#include <cuda_runtime.h>

#define STAGE_BYTES (1 << 20)

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    extern __shared__ float stage[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    stage[threadIdx.x] = i < N ? A[i] : 0.0f;
    __syncthreads();
    if (i < N) C[i] = stage[threadIdx.x] + B[i];
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    vector_add_kernel_optimized<<<blocks, threads, STAGE_BYTES>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
