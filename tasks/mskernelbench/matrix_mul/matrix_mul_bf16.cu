// matrix_mul (BF16): C(M,N) = A(M,K) B(K,N), float accumulation, one rounding; follows the benchmark's naive kernel: 16x16 blocks, one thread per element of C.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void matrix_mul_bf16_kernel(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C,
                                       int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) {
            sum += __bfloat162float(A[(size_t)row * K + k]) * __bfloat162float(B[(size_t)k * N + col]);
        }
        C[(size_t)row * N + col] = __float2bfloat16(sum);
    }
}

extern "C" void matrix_mul_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K) {
    dim3 threads(16, 16);
    dim3 blocks((N + threads.x - 1) / threads.x, (M + threads.y - 1) / threads.y);
    matrix_mul_bf16_kernel<<<blocks, threads>>>(A, B, C, M, N, K);
    cudaDeviceSynchronize();
}
