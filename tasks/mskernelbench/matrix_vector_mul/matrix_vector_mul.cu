// matrix_vector_mul (FP32): y(M) = A(M,N) x(N); follows the benchmark's naive kernel: 256-thread blocks, one thread per row, sequential dot product.
#include <cuda_runtime.h>

__global__ void matrix_vector_mul_kernel(const float* A, const float* x, float* y, int M, int N) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M) {
        float sum = 0.0f;
        for (int j = 0; j < N; ++j) {
            sum += A[(size_t)row * N + j] * x[j];
        }
        y[row] = sum;
    }
}

extern "C" void matrix_vector_mul(const float* A, const float* x, float* y, int M, int N) {
    int threads = 256;
    int blocks = (M + threads - 1) / threads;
    matrix_vector_mul_kernel<<<blocks, threads>>>(A, x, y, M, N);
    cudaDeviceSynchronize();
}
