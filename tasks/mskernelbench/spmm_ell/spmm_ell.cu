// spmm_ell (FP32): Y = A X, A in row-major ELL (col_ids -1 = padding), X and Y row-major; follows the benchmark's naive kernel: 16x16 blocks over (row, k), one thread per element of Y.
#include <cuda_runtime.h>

__global__ void spmm_ell_kernel(int rows, int max_nnz_per_row, int K, const float* values, const int* col_ids,
                                const float* X, float* Y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int k = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && k < K) {
        float sum = 0.0f;
        for (int j = 0; j < max_nnz_per_row; ++j) {
            size_t slot = (size_t)row * max_nnz_per_row + j;
            int col = col_ids[slot];
            if (col != -1) {
                sum += values[slot] * X[(size_t)col * K + k];
            }
        }
        Y[(size_t)row * K + k] = sum;
    }
}

extern "C" void spmm_ell(int rows, int max_nnz_per_row, int K, const float *values, const int *col_ids,
                         const float *X, float *Y) {
    dim3 threads(16, 16);
    dim3 blocks((rows + threads.x - 1) / threads.x, (K + threads.y - 1) / threads.y);
    spmm_ell_kernel<<<blocks, threads>>>(rows, max_nnz_per_row, K, values, col_ids, X, Y);
    cudaDeviceSynchronize();
}
