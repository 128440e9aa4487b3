// square_matrix_mul (FP32): C(M,M) = A B, row-major; follows the benchmark's naive kernel: 16x16 blocks, one thread per element of C, operands read from global memory.
#include <cuda_runtime.h>

__global__ void square_matrix_mul_kernel(const float* A, const float* B, float* C, int M) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < M) {
        float sum = 0.0f;
        for (int k = 0; k < M; ++k) {
            sum += A[(size_t)row * M + k] * B[(size_t)k * M + col];
        }
        C[(size_t)row * M + col] = sum;
    }
}

extern "C" void square_matrix_mul(float* A, float* B, float* C, int M) {
    dim3 threads(16, 16);
    dim3 blocks((M + threads.x - 1) / threads.x, (M + threads.y - 1) / threads.y);
    square_matrix_mul_kernel<<<blocks, threads>>>(A, B, C, M);
    cudaDeviceSynchronize();
}
