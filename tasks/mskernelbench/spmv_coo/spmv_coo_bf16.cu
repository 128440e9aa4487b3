// MSKernelBench baseline: spmv_coo (BF16), y = A x with A in COO format, entries sorted by
// row then column. Naive: one thread per row (binary search for the row's first entry),
// float accumulation, one rounding to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmv_coo_bf16_kernel(int rows, int nnz, const __nv_bfloat16* values, const int* row_indices,
                                     const int* col_indices, const __nv_bfloat16* x, __nv_bfloat16* y) {
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
            sum += __bfloat162float(values[p]) * __bfloat162float(x[col_indices[p]]);
        }
        y[row] = __float2bfloat16(sum);
    }
}

extern "C" void spmv_coo_bf16(int rows, int nnz, const __nv_bfloat16* values, const int* row_indices,
                              const int* col_indices, const __nv_bfloat16* x, __nv_bfloat16* y) {
    int threads = 256;
    int blocks = (rows + threads - 1) / threads;
    spmv_coo_bf16_kernel<<<blocks, threads>>>(rows, nnz, values, row_indices, col_indices, x, y);
    cudaDeviceSynchronize();
}
