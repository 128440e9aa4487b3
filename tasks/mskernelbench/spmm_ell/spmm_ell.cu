// MSKernelBench baseline: spmm_ell (FP32), Y(rows, K) = A X with A in row-major ELL format
// (slot j of row r at r * max_nnz_per_row + j, padding marked by col_ids == -1), X (cols, K)
// and Y row-major. Naive: one thread per element of Y, a sequential sum over its row's slots
// (padding skipped), X read from global memory.
#include <cuda_runtime.h>

__global__ void spmm_ell_kernel(int rows, int max_nnz_per_row, int K, const float* values, const int* col_ids,
                                const float* X, float* Y) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
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
    dim3 threads(32, 8);
    dim3 blocks((K + threads.x - 1) / threads.x, (rows + threads.y - 1) / threads.y);
    spmm_ell_kernel<<<blocks, threads>>>(rows, max_nnz_per_row, K, values, col_ids, X, Y);
    cudaDeviceSynchronize();
}
