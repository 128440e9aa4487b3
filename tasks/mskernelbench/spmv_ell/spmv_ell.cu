// spmv_ell (FP32): y = A x, A in row-major ELL (col_ids -1 = padding); follows the benchmark's naive kernel: 256-thread blocks, one thread per row.
#include <cuda_runtime.h>

__global__ void spmv_ell_kernel(int rows, int max_nnz_per_row, const float* values, const int* col_ids,
                                const float* x, float* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float sum = 0.0f;
        for (int j = 0; j < max_nnz_per_row; ++j) {
            size_t slot = (size_t)row * max_nnz_per_row + j;
            int col = col_ids[slot];
            if (col != -1) {
                sum += values[slot] * x[col];
            }
        }
        y[row] = sum;
    }
}

extern "C" void spmv_ell(int rows, int max_nnz_per_row, const float *values, const int *col_ids, const float *x,
                         float *y) {
    int threads = 256;
    int blocks = (rows + threads - 1) / threads;
    spmv_ell_kernel<<<blocks, threads>>>(rows, max_nnz_per_row, values, col_ids, x, y);
    cudaDeviceSynchronize();
}
