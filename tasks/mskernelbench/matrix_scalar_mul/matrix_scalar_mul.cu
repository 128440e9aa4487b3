// matrix_scalar_mul (FP32): B(M,N) = A(M,N) * scalar; follows the benchmark's naive kernel: 16x16 blocks, one thread per element.
#include <cuda_runtime.h>

__global__ void matrix_scalar_mul_kernel(const float* A, float* B, float scalar, int M, int N) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        B[(size_t)row * N + col] = scalar * A[(size_t)row * N + col];
    }
}

extern "C" void matrix_scalar_mul(const float* A, float* B, float scalar, int M, int N) {
    dim3 threads(16, 16);
    dim3 blocks((N + threads.x - 1) / threads.x, (M + threads.y - 1) / threads.y);
    matrix_scalar_mul_kernel<<<blocks, threads>>>(A, B, scalar, M, N);
    cudaDeviceSynchronize();
}
