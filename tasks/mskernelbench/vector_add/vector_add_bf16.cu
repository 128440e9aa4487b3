// MSKernelBench baseline: vector_add (BF16). Naive: one thread per element, the sum
// computed in float and rounded once to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void vector_add_bf16_kernel(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        C[i] = __float2bfloat16(__bfloat162float(A[i]) + __bfloat162float(B[i]));
    }
}

extern "C" void vector_add_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    vector_add_bf16_kernel<<<blocks, threads>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
