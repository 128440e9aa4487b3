// MSKernelBench baseline: spmv_csc (BF16), y = A x with A in CSC format. Naive: a float
// accumulator (kept between calls) is zeroed, one thread per column adds value * x[col] of
// each of its nonzeros to it with atomicAdd, then a second kernel rounds it once to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmv_csc_bf16_kernel(int columns, const __nv_bfloat16* values, const int* row_indices,
                                     const int* col_offsets, const __nv_bfloat16* x, float* acc) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col < columns) {
        float xc = __bfloat162float(x[col]);
        for (int p = col_offsets[col]; p < col_offsets[col + 1]; ++p) {
            atomicAdd(&acc[row_indices[p]], __bfloat162float(values[p]) * xc);
        }
    }
}

__global__ void spmv_csc_bf16_round_kernel(int n, const float* acc, __nv_bfloat16* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = __float2bfloat16(acc[i]);
    }
}

extern "C" void spmv_csc_bf16(int rows, int columns, const __nv_bfloat16* values, const int* row_indices,
                              const int* col_offsets, const __nv_bfloat16* x, __nv_bfloat16* y) {
    static float* acc = nullptr;  // float accumulator, allocated once and grown when needed
    static size_t acc_len = 0;
    if (acc_len < (size_t)rows) {
        cudaFree(acc);
        cudaMalloc(&acc, (size_t)rows * sizeof(float));
        acc_len = rows;
    }
    cudaMemset(acc, 0, (size_t)rows * sizeof(float));
    int threads = 256;
    spmv_csc_bf16_kernel<<<(columns + threads - 1) / threads, threads>>>(columns, values, row_indices, col_offsets, x,
                                                                          acc);
    spmv_csc_bf16_round_kernel<<<(rows + threads - 1) / threads, threads>>>(rows, acc, y);
    cudaDeviceSynchronize();
}
