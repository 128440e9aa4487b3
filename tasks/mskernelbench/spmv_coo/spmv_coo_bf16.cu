// spmv_coo (BF16): y = A x, A in COO; follows the benchmark's naive wrapper: a float scratch y allocated and zeroed per call, one thread per nonzero with atomicAdd, then a rounding pass to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmv_coo_bf16_kernel(int nnz, const __nv_bfloat16* values, const int* row_indices,
                                     const int* col_indices, const __nv_bfloat16* x, float* y_acc) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < nnz) {
        atomicAdd(&y_acc[row_indices[p]], __bfloat162float(values[p]) * __bfloat162float(x[col_indices[p]]));
    }
}

__global__ void spmv_coo_bf16_round_kernel(const float* y_acc, __nv_bfloat16* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(y_acc[i]);
}

extern "C" void spmv_coo_bf16(int rows, int nnz, const __nv_bfloat16* values, const int* row_indices,
                              const int* col_indices, const __nv_bfloat16* x, __nv_bfloat16* y) {
    float* y_acc = nullptr;
    cudaMalloc(&y_acc, (size_t)rows * sizeof(float));
    cudaMemset(y_acc, 0, (size_t)rows * sizeof(float));
    int threads = 256;
    spmv_coo_bf16_kernel<<<(nnz + threads - 1) / threads, threads>>>(nnz, values, row_indices, col_indices, x, y_acc);
    spmv_coo_bf16_round_kernel<<<(rows + threads - 1) / threads, threads>>>(y_acc, y, rows);
    cudaFree(y_acc);
    cudaDeviceSynchronize();
}
