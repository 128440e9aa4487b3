// spmv_csr (BF16): y = A x, A in CSR, float accumulation, one rounding; follows the benchmark's naive kernel: 32x32 blocks indexed by threadIdx.x only, so each row is summed by 32 warps.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmv_csr_bf16_kernel(int rows, const __nv_bfloat16* values, const int* col_indices,
                                     const int* row_offsets, const __nv_bfloat16* x, __nv_bfloat16* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;  // threadIdx.y is not used, as in the benchmark
    if (row < rows) {
        float sum = 0.0f;
        for (int p = row_offsets[row]; p < row_offsets[row + 1]; ++p) {
            sum += __bfloat162float(values[p]) * __bfloat162float(x[col_indices[p]]);
        }
        y[row] = __float2bfloat16(sum);
    }
}

extern "C" void spmv_csr_bf16(int rows, const __nv_bfloat16* values, const int* col_indices, const int* row_offsets,
                              const __nv_bfloat16* x, __nv_bfloat16* y) {
    dim3 threads(32, 32);
    dim3 blocks((rows + 31) / 32);
    spmv_csr_bf16_kernel<<<blocks, threads>>>(rows, values, col_indices, row_offsets, x, y);
    cudaDeviceSynchronize();
}
