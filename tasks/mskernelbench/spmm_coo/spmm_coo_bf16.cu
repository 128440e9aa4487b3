// MSKernelBench baseline: spmm_coo (BF16), Y(rows, K) = A X with A in COO format (entries
// sorted by row then column), X (cols, K) and Y row-major. Naive: one thread per element of
// Y (binary search for its row's first entry), float accumulation, one rounding to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void spmm_coo_bf16_kernel(int rows, int nnz, int K, const __nv_bfloat16* values, const int* row_indices,
                                     const int* col_indices, const __nv_bfloat16* X, __nv_bfloat16* Y) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && k < K) {
        int lo = 0, hi = nnz;  // first p with row_indices[p] >= row
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (row_indices[mid] < row) lo = mid + 1;
            else hi = mid;
        }
        float sum = 0.0f;
        for (int p = lo; p < nnz && row_indices[p] == row; ++p) {
            sum += __bfloat162float(values[p]) * __bfloat162float(X[(size_t)col_indices[p] * K + k]);
        }
        Y[(size_t)row * K + k] = __float2bfloat16(sum);
    }
}

extern "C" void spmm_coo_bf16(int rows, int nnz, int K, const __nv_bfloat16* values, const int* row_indices,
                              const int* col_indices, const __nv_bfloat16* X, __nv_bfloat16* Y) {
    dim3 threads(32, 8);
    dim3 blocks((K + threads.x - 1) / threads.x, (rows + threads.y - 1) / threads.y);
    spmm_coo_bf16_kernel<<<blocks, threads>>>(rows, nnz, K, values, row_indices, col_indices, X, Y);
    cudaDeviceSynchronize();
}
