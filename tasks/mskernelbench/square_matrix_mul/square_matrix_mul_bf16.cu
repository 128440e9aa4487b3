// square_matrix_mul (BF16): C(M,M) = A B, float accumulation, one rounding; follows the benchmark's naive kernel: 16x16 blocks, one thread per element of C.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void square_matrix_mul_bf16_kernel(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C,
                                              int M) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < M) {
        float sum = 0.0f;
        for (int k = 0; k < M; ++k) {
            sum += __bfloat162float(A[(size_t)row * M + k]) * __bfloat162float(B[(size_t)k * M + col]);
        }
        C[(size_t)row * M + col] = __float2bfloat16(sum);
    }
}

extern "C" void square_matrix_mul_bf16(__nv_bfloat16* A, __nv_bfloat16* B, __nv_bfloat16* C, int M) {
    dim3 threads(16, 16);
    dim3 blocks((M + threads.x - 1) / threads.x, (M + threads.y - 1) / threads.y);
    square_matrix_mul_bf16_kernel<<<blocks, threads>>>(A, B, C, M);
    cudaDeviceSynchronize();
}
