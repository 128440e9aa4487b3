// MSKernelBench baseline: spmm_csc (FP32), Y(rows, K) = A X with A in CSC format, X (cols, K)
// and Y row-major. Naive: Y is zeroed, then one thread per (column, k) adds value * X[col][k]
// of each of the column's nonzeros to Y[row][k] with atomicAdd (float accumulation, order
// decided by the hardware).
#include <cuda_runtime.h>

__global__ void spmm_csc_kernel(int columns, int K, const float* values, const int* row_indices,
                                const int* col_offsets, const float* X, float* Y) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < columns && k < K) {
        float xv = X[(size_t)col * K + k];
        for (int p = col_offsets[col]; p < col_offsets[col + 1]; ++p) {
            atomicAdd(&Y[(size_t)row_indices[p] * K + k], values[p] * xv);
        }
    }
}

extern "C" void spmm_csc(int rows, int columns, int K, const float* values, const int* row_indices,
                         const int* col_offsets, const float* X, float* Y) {
    cudaMemset(Y, 0, (size_t)rows * K * sizeof(float));
    dim3 threads(32, 8);
    dim3 blocks((K + threads.x - 1) / threads.x, (columns + threads.y - 1) / threads.y);
    spmm_csc_kernel<<<blocks, threads>>>(columns, K, values, row_indices, col_offsets, X, Y);
    cudaDeviceSynchronize();
}
