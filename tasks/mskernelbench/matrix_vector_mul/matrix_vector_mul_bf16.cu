// matrix_vector_mul (BF16): y(M) = A(M,N) x(N), float accumulation, one rounding; follows the benchmark's naive kernel: 256-thread blocks, one thread per row.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void matrix_vector_mul_bf16_kernel(const __nv_bfloat16* A, const __nv_bfloat16* x, __nv_bfloat16* y, int M,
                                              int N) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M) {
        float sum = 0.0f;
        for (int j = 0; j < N; ++j) {
            sum += __bfloat162float(A[(size_t)row * N + j]) * __bfloat162float(x[j]);
        }
        y[row] = __float2bfloat16(sum);
    }
}

extern "C" void matrix_vector_mul_bf16(const __nv_bfloat16* A, const __nv_bfloat16* x, __nv_bfloat16* y, int M, int N) {
    int threads = 256;
    int blocks = (M + threads - 1) / threads;
    matrix_vector_mul_bf16_kernel<<<blocks, threads>>>(A, x, y, M, N);
    cudaDeviceSynchronize();
}
