// spmm_csr (BF16): Y = A X, A in CSR, float accumulation, one rounding; follows the benchmark's naive kernel: 16x16 blocks over (k, row), one thread per element of Y.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmm_csr_bf16_kernel(int rows, int K, const __nv_bfloat16* values, const int* col_indices,
                                     const int* row_offsets, const __nv_bfloat16* X, __nv_bfloat16* Y) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && k < K) {
        float sum = 0.0f;
        for (int p = row_offsets[row]; p < row_offsets[row + 1]; ++p) {
            sum += __bfloat162float(values[p]) * __bfloat162float(X[(size_t)col_indices[p] * K + k]);
        }
        Y[(size_t)row * K + k] = __float2bfloat16(sum);
    }
}

extern "C" void spmm_csr_bf16(int rows, int K, const __nv_bfloat16* values, const int* col_indices,
                              const int* row_offsets, const __nv_bfloat16* X, __nv_bfloat16* Y) {
    dim3 threads(16, 16);
    dim3 blocks((K + threads.x - 1) / threads.x, (rows + threads.y - 1) / threads.y);
    spmm_csr_bf16_kernel<<<blocks, threads>>>(rows, K, values, col_indices, row_offsets, X, Y);
    cudaDeviceSynchronize();
}
