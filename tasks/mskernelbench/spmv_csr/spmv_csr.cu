// spmv_csr (FP32): y = A x, A in CSR; follows the benchmark's naive kernel: 32x32 blocks indexed by threadIdx.x only, so each of a block's 32 rows is summed by all 32 warps (same value written 32 times).
#include <cuda_runtime.h>

__global__ void spmv_csr_kernel(int rows, const float* values, const int* col_indices, const int* row_offsets,
                                const float* x, float* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;  // threadIdx.y is not used, as in the benchmark
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
    dim3 threads(32, 32);
    dim3 blocks((rows + 31) / 32);
    spmv_csr_kernel<<<blocks, threads>>>(rows, values, col_indices, row_offsets, x, y);
    cudaDeviceSynchronize();
}
