// matrix_scalar_mul (BF16): B(M,N) = A(M,N) * scalar in float, one rounding; follows the benchmark's naive kernel: 16x16 blocks, one thread per element.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void matrix_scalar_mul_bf16_kernel(const __nv_bfloat16* A, __nv_bfloat16* B, __nv_bfloat16 scalar, int M,
                                              int N) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        B[(size_t)row * N + col] = __float2bfloat16(__bfloat162float(scalar) * __bfloat162float(A[(size_t)row * N + col]));
    }
}

extern "C" void matrix_scalar_mul_bf16(const __nv_bfloat16* A, __nv_bfloat16* B, __nv_bfloat16 scalar, int M, int N) {
    dim3 threads(16, 16);
    dim3 blocks((N + threads.x - 1) / threads.x, (M + threads.y - 1) / threads.y);
    matrix_scalar_mul_bf16_kernel<<<blocks, threads>>>(A, B, scalar, M, N);
    cudaDeviceSynchronize();
}
