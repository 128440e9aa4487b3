// MSKernelBench baseline: spmv_csr (FP32), y = A x with A in CSR format.
// Naive: one thread per row, sequential sum over the row's nonzeros.
#include <cuda_runtime.h>

__global__ void spmv_csr_kernel(int rows, const float* values, const int* col_indices, const int* row_offsets,
                                const float* x, float* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float sum = 0.0f;
        for (int p = row_offsets[row]; p < row_offsets[row + 1]; ++p) {
            sum += values[p] * x[col_indices[p]];
        }
        y[row] = sum;
    }
}

extern "C" void spmv_csr(int rows, const float* values, const int* col_indices, const int* row_offsets,
                         const float* x, float* y) {
    int threads = 256;
    int blocks = (rows + threads - 1) / threads;
    spmv_csr_kernel<<<blocks, threads>>>(rows, values, col_indices, row_offsets, x, y);
    cudaDeviceSynchronize();
}
