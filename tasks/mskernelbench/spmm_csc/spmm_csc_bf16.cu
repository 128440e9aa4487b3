// spmm_csc (BF16): Y = A X, A in CSC; follows the benchmark's naive wrapper: a float scratch Y allocated and zeroed per call, 16x16 blocks over (column, k) with atomicAdd, then a rounding pass to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmm_csc_bf16_kernel(int columns, int K, const __nv_bfloat16* values, const int* row_indices,
                                     const int* col_offsets, const __nv_bfloat16* X, float* Y_acc) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int k = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < columns && k < K) {
        for (int p = col_offsets[col]; p < col_offsets[col + 1]; ++p) {
            float product = __bfloat162float(values[p]) * __bfloat162float(X[(size_t)col * K + k]);
            atomicAdd(&Y_acc[(size_t)row_indices[p] * K + k], product);
        }
    }
}

__global__ void spmm_csc_bf16_round_kernel(const float* Y_acc, __nv_bfloat16* Y, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) Y[i] = __float2bfloat16(Y_acc[i]);
}

extern "C" void spmm_csc_bf16(int rows, int columns, int K, const __nv_bfloat16* values, const int* row_indices,
                              const int* col_offsets, const __nv_bfloat16* X, __nv_bfloat16* Y) {
    const size_t n = (size_t)rows * K;
    float* Y_acc = nullptr;
    cudaMalloc(&Y_acc, n * sizeof(float));
    cudaMemset(Y_acc, 0, n * sizeof(float));
    dim3 threads(16, 16);
    dim3 blocks((columns + threads.x - 1) / threads.x, (K + threads.y - 1) / threads.y);
    spmm_csc_bf16_kernel<<<blocks, threads>>>(columns, K, values, row_indices, col_offsets, X, Y_acc);
    spmm_csc_bf16_round_kernel<<<(unsigned)((n + 255) / 256), 256>>>(Y_acc, Y, n);
    cudaFree(Y_acc);
    cudaDeviceSynchronize();
}
