// spmm_coo (BF16): Y = A X, A in COO; follows the benchmark's naive wrapper: a float scratch Y allocated and zeroed per call, 16x16 blocks over (nonzero, k) with atomicAdd, then a rounding pass to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmm_coo_bf16_kernel(int nnz, int K, const __nv_bfloat16* values, const int* row_indices,
                                     const int* col_indices, const __nv_bfloat16* X, float* Y_acc) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    int k = blockIdx.y * blockDim.y + threadIdx.y;
    if (p < nnz && k < K) {
        float product = __bfloat162float(values[p]) * __bfloat162float(X[(size_t)col_indices[p] * K + k]);
        atomicAdd(&Y_acc[(size_t)row_indices[p] * K + k], product);
    }
}

__global__ void spmm_coo_bf16_round_kernel(const float* Y_acc, __nv_bfloat16* Y, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) Y[i] = __float2bfloat16(Y_acc[i]);
}

extern "C" void spmm_coo_bf16(int rows, int nnz, int K, const __nv_bfloat16* values, const int* row_indices,
                              const int* col_indices, const __nv_bfloat16* X, __nv_bfloat16* Y) {
    const size_t n = (size_t)rows * K;
    float* Y_acc = nullptr;
    cudaMalloc(&Y_acc, n * sizeof(float));
    cudaMemset(Y_acc, 0, n * sizeof(float));
    dim3 threads(16, 16);
    dim3 blocks((nnz + threads.x - 1) / threads.x, (K + threads.y - 1) / threads.y);
    spmm_coo_bf16_kernel<<<blocks, threads>>>(nnz, K, values, row_indices, col_indices, X, Y_acc);
    spmm_coo_bf16_round_kernel<<<(unsigned)((n + 255) / 256), 256>>>(Y_acc, Y, n);
    cudaFree(Y_acc);
    cudaDeviceSynchronize();
}
