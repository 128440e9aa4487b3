// spmv_ell (BF16): y = A x, A in row-major ELL, float accumulation, one rounding; follows the benchmark's naive kernel: 256-thread blocks, one thread per row.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmv_ell_bf16_kernel(int rows, int max_nnz_per_row, const __nv_bfloat16* values, const int* col_ids,
                                     const __nv_bfloat16* x, __nv_bfloat16* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float sum = 0.0f;
        for (int j = 0; j < max_nnz_per_row; ++j) {
            size_t slot = (size_t)row * max_nnz_per_row + j;
            int col = col_ids[slot];
            if (col != -1) {
                sum += __bfloat162float(values[slot]) * __bfloat162float(x[col]);
            }
        }
        y[row] = __float2bfloat16(sum);
    }
}

extern "C" void spmv_ell_bf16(int rows, int max_nnz_per_row, const __nv_bfloat16 *values, const int *col_ids,
                              const __nv_bfloat16 *x, __nv_bfloat16 *y) {
    int threads = 256;
    int blocks = (rows + threads - 1) / threads;
    spmv_ell_bf16_kernel<<<blocks, threads>>>(rows, max_nnz_per_row, values, col_ids, x, y);
    cudaDeviceSynchronize();
}
