// matrix_transpose (FP32): B(N,M) = A(M,N)^T; follows the benchmark's naive kernel: 16x16 blocks, one thread per element, strided writes.
#include <cuda_runtime.h>

__global__ void matrix_transpose_kernel(const float* A, float* B, int M, int N) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        B[(size_t)col * M + row] = A[(size_t)row * N + col];
    }
}

extern "C" void matrix_transpose(const float* A, float* B, int M, int N) {
    dim3 threads(16, 16);
    dim3 blocks((N + threads.x - 1) / threads.x, (M + threads.y - 1) / threads.y);
    matrix_transpose_kernel<<<blocks, threads>>>(A, B, M, N);
    cudaDeviceSynchronize();
}
