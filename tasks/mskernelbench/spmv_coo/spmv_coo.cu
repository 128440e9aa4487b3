// MSKernelBench baseline: spmv_coo (FP32), y = A x with A in COO format, entries sorted by
// row then column. Naive: one thread per row; it finds the row's first entry by binary
// search in row_indices, then sums the row's products sequentially.
#include <cuda_runtime.h>

__global__ void spmv_coo_kernel(int rows, int nnz, const float* values, const int* row_indices,
                                const int* col_indices, const float* x, float* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        int lo = 0, hi = nnz;  // first p with row_indices[p] >= row
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (row_indices[mid] < row) lo = mid + 1;
            else hi = mid;
        }
        float sum = 0.0f;
        for (int p = lo; p < nnz && row_indices[p] == row; ++p) {
            sum += values[p] * x[col_indices[p]];
        }
        y[row] = sum;
    }
}

extern "C" void spmv_coo(int rows, int nnz, const float* values, const int* row_indices, const int* col_indices,
                         const float* x, float* y) {
    int threads = 256;
    int blocks = (rows + threads - 1) / threads;
    spmv_coo_kernel<<<blocks, threads>>>(rows, nnz, values, row_indices, col_indices, x, y);
    cudaDeviceSynchronize();
}
