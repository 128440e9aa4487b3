// high_order_contraction (FP32): C[a,b,c] = sum_{x,y} A[a,x,b,y] B[x,c,y]; follows the benchmark's naive kernel: 256-thread blocks, one thread per element of C.
#include <cuda_runtime.h>

__global__ void high_order_contraction_kernel(const float* A, const float* B, float* C, int a_dim, int b_dim,
                                              int c_dim, int x_dim, int y_dim) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t total = (size_t)a_dim * b_dim * c_dim;
    if (idx < total) {
        int c = idx % c_dim;
        int b = (idx / c_dim) % b_dim;
        int a = idx / ((size_t)c_dim * b_dim);
        float sum = 0.0f;
        for (int x = 0; x < x_dim; ++x) {
            for (int y = 0; y < y_dim; ++y) {
                sum += A[(((size_t)a * x_dim + x) * b_dim + b) * y_dim + y] * B[((size_t)x * c_dim + c) * y_dim + y];
            }
        }
        C[idx] = sum;
    }
}

extern "C" void high_order_contraction(const float* A, const float* B, float* C, int a_dim, int b_dim, int c_dim,
                                       int x_dim, int y_dim) {
    size_t total = (size_t)a_dim * b_dim * c_dim;
    int threads = 256;
    int blocks = (int)((total + threads - 1) / threads);
    high_order_contraction_kernel<<<blocks, threads>>>(A, B, C, a_dim, b_dim, c_dim, x_dim, y_dim);
    cudaDeviceSynchronize();
}
