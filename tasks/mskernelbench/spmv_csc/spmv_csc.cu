// spmv_csc (FP32): y += A x, A in CSC; follows the benchmark's naive kernel: one thread per column (256-thread blocks), atomicAdd of each nonzero's product into the zeroed y.
#include <cuda_runtime.h>

__global__ void spmv_csc_kernel(int columns, const float* values, const int* row_indices, const int* col_offsets,
                                const float* x, float* y) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col < columns) {
        float xc = x[col];
        for (int p = col_offsets[col]; p < col_offsets[col + 1]; ++p) {
            atomicAdd(&y[row_indices[p]], values[p] * xc);
        }
    }
}

// y must be 0 on entry (the harness zeroes it before every call, as the benchmark does).
extern "C" void spmv_csc(int rows, int columns, const float* values, const int* row_indices, const int* col_offsets,
                         const float* x, float* y) {
    int threads = 256;
    int blocks = (columns + threads - 1) / threads;
    spmv_csc_kernel<<<blocks, threads>>>(columns, values, row_indices, col_offsets, x, y);
    cudaDeviceSynchronize();
}
