// spmv_csc (BF16): y = A x, A in CSC; follows the benchmark's naive wrapper: a float scratch y allocated and zeroed per call, one thread per column with atomicAdd, then a rounding pass to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmv_csc_bf16_kernel(int columns, const __nv_bfloat16* values, const int* row_indices,
                                     const int* col_offsets, const __nv_bfloat16* x, float* y_acc) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col < columns) {
        float xc = __bfloat162float(x[col]);
        for (int p = col_offsets[col]; p < col_offsets[col + 1]; ++p) {
            atomicAdd(&y_acc[row_indices[p]], __bfloat162float(values[p]) * xc);
        }
    }
}

__global__ void spmv_csc_bf16_round_kernel(const float* y_acc, __nv_bfloat16* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(y_acc[i]);
}

extern "C" void spmv_csc_bf16(int rows, int columns, const __nv_bfloat16* values, const int* row_indices,
                              const int* col_offsets, const __nv_bfloat16* x, __nv_bfloat16* y) {
    float* y_acc = nullptr;
    cudaMalloc(&y_acc, (size_t)rows * sizeof(float));
    cudaMemset(y_acc, 0, (size_t)rows * sizeof(float));
    int threads = 256;
    spmv_csc_bf16_kernel<<<(columns + threads - 1) / threads, threads>>>(columns, values, row_indices, col_offsets, x,
                                                                          y_acc);
    spmv_csc_bf16_round_kernel<<<(rows + threads - 1) / threads, threads>>>(y_acc, y, rows);
    cudaFree(y_acc);
    cudaDeviceSynchronize();
}
