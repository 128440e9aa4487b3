// spmm_ell (BF16): Y = A X, A in row-major ELL, float accumulation, one rounding; follows the benchmark's naive kernel: 16x16 blocks over (row, k), one thread per element of Y.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmm_ell_bf16_kernel(int rows, int max_nnz_per_row, int K, const __nv_bfloat16* values,
                                     const int* col_ids, const __nv_bfloat16* X, __nv_bfloat16* Y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int k = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && k < K) {
        float sum = 0.0f;
        for (int j = 0; j < max_nnz_per_row; ++j) {
            size_t slot = (size_t)row * max_nnz_per_row + j;
            int col = col_ids[slot];
            if (col != -1) {
                sum += __bfloat162float(values[slot]) * __bfloat162float(X[(size_t)col * K + k]);
            }
        }
        Y[(size_t)row * K + k] = __float2bfloat16(sum);
    }
}

extern "C" void spmm_ell_bf16(int rows, int max_nnz_per_row, int K, const __nv_bfloat16 *values, const int *col_ids,
                              const __nv_bfloat16 *X, __nv_bfloat16 *Y) {
    dim3 threads(16, 16);
    dim3 blocks((rows + threads.x - 1) / threads.x, (K + threads.y - 1) / threads.y);
    spmm_ell_bf16_kernel<<<blocks, threads>>>(rows, max_nnz_per_row, K, values, col_ids, X, Y);
    cudaDeviceSynchronize();
}
