// spmv_coo (FP32): y += A x, A in COO; follows the benchmark's naive kernel: one thread per nonzero (256-thread blocks), atomicAdd into the zeroed y.
#include <cuda_runtime.h>

__global__ void spmv_coo_kernel(int nnz, const float* values, const int* row_indices, const int* col_indices,
                                const float* x, float* y) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < nnz) {
        atomicAdd(&y[row_indices[p]], values[p] * x[col_indices[p]]);
    }
}

// y must be 0 on entry (the harness zeroes it before every call, as the benchmark does).
extern "C" void spmv_coo(int rows, int nnz, const float* values, const int* row_indices, const int* col_indices,
                         const float* x, float* y) {
    int threads = 256;
    int blocks = (nnz + threads - 1) / threads;
    spmv_coo_kernel<<<blocks, threads>>>(nnz, values, row_indices, col_indices, x, y);
    cudaDeviceSynchronize();
}
