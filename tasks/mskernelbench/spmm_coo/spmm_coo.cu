// MSKernelBench baseline: spmm_coo (FP32), Y(rows, K) = A X with A in COO format (entries
// sorted by row then column), X (cols, K) and Y row-major. Naive: one thread per element of
// Y; it finds its row's first entry by binary search in row_indices, then sums the row's
// products sequentially, reading X from global memory.
#include <cuda_runtime.h>

__global__ void spmm_coo_kernel(int rows, int nnz, int K, const float* values, const int* row_indices,
                                const int* col_indices, const float* X, float* Y) {
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
            sum += values[p] * X[(size_t)col_indices[p] * K + k];
        }
        Y[(size_t)row * K + k] = sum;
    }
}

extern "C" void spmm_coo(int row, int nnz, int K, const float* values, const int* row_indices, const int* col_indices,
                         const float* X, float* Y) {
    dim3 threads(32, 8);
    dim3 blocks((K + threads.x - 1) / threads.x, (row + threads.y - 1) / threads.y);
    spmm_coo_kernel<<<blocks, threads>>>(row, nnz, K, values, row_indices, col_indices, X, Y);
    cudaDeviceSynchronize();
}
