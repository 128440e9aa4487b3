// MSKernelBench baseline: spmm_csc (BF16), Y(rows, K) = A X with A in CSC format, X (cols, K)
// and Y row-major. Naive: a float accumulator (kept between calls) is zeroed, one thread per
// (column, k) adds value * X[col][k] of each of the column's nonzeros to it with atomicAdd,
// then a second kernel rounds it once to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmm_csc_bf16_kernel(int columns, int K, const __nv_bfloat16* values, const int* row_indices,
                                     const int* col_offsets, const __nv_bfloat16* X, float* acc) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < columns && k < K) {
        float xv = __bfloat162float(X[(size_t)col * K + k]);
        for (int p = col_offsets[col]; p < col_offsets[col + 1]; ++p) {
            atomicAdd(&acc[(size_t)row_indices[p] * K + k], __bfloat162float(values[p]) * xv);
        }
    }
}

__global__ void spmm_csc_bf16_round_kernel(size_t n, const float* acc, __nv_bfloat16* Y) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        Y[i] = __float2bfloat16(acc[i]);
    }
}

extern "C" void spmm_csc_bf16(int rows, int columns, int K, const __nv_bfloat16* values, const int* row_indices,
                              const int* col_offsets, const __nv_bfloat16* X, __nv_bfloat16* Y) {
    static float* acc = nullptr;  // float accumulator, allocated once and grown when needed
    static size_t acc_len = 0;
    size_t n = (size_t)rows * K;
    if (acc_len < n) {
        cudaFree(acc);
        cudaMalloc(&acc, n * sizeof(float));
        acc_len = n;
    }
    cudaMemset(acc, 0, n * sizeof(float));
    dim3 threads(32, 8);
    dim3 blocks((K + threads.x - 1) / threads.x, (columns + threads.y - 1) / threads.y);
    spmm_csc_bf16_kernel<<<blocks, threads>>>(columns, K, values, row_indices, col_offsets, X, acc);
    spmm_csc_bf16_round_kernel<<<(unsigned)((n + 255) / 256), 256>>>(n, acc, Y);
    cudaDeviceSynchronize();
}
