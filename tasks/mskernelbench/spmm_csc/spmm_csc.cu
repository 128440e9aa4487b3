// spmm_csc (FP32): Y += A X, A in CSC; follows the benchmark's naive kernel: 16x16 blocks over (column, k), atomicAdd of each nonzero's product into the zeroed Y.
#include <cuda_runtime.h>

__global__ void spmm_csc_kernel(int columns, int K, const float* values, const int* row_indices,
                                const int* col_offsets, const float* X, float* Y) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int k = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < columns && k < K) {
        for (int p = col_offsets[col]; p < col_offsets[col + 1]; ++p) {
            atomicAdd(&Y[(size_t)row_indices[p] * K + k], values[p] * X[(size_t)col * K + k]);
        }
    }
}

// Y must be 0 on entry (the harness zeroes it before every call, as the benchmark does).
extern "C" void spmm_csc(int rows, int columns, int K, const float* values, const int* row_indices,
                         const int* col_offsets, const float* X, float* Y) {
    dim3 threads(16, 16);
    dim3 blocks((columns + threads.x - 1) / threads.x, (K + threads.y - 1) / threads.y);
    spmm_csc_kernel<<<blocks, threads>>>(columns, K, values, row_indices, col_offsets, X, Y);
    cudaDeviceSynchronize();
}
