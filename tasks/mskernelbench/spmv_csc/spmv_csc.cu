// MSKernelBench baseline: spmv_csc (FP32), y = A x with A in CSC format. Naive: y is zeroed,
// then one thread per column adds value * x[col] of each of its nonzeros to y[row] with
// atomicAdd (float accumulation, order decided by the hardware).
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

extern "C" void spmv_csc(int rows, int columns, const float* values, const int* row_indices, const int* col_offsets,
                         const float* x, float* y) {
    cudaMemset(y, 0, (size_t)rows * sizeof(float));
    int threads = 256;
    int blocks = (columns + threads - 1) / threads;
    spmv_csc_kernel<<<blocks, threads>>>(columns, values, row_indices, col_offsets, x, y);
    cudaDeviceSynchronize();
}
