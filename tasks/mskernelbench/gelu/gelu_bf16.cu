// MSKernelBench baseline: gelu (BF16), exact form x * Phi(x) with erf, computed in
// float and rounded once. Naive: one thread per element.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void gelu_bf16_kernel(__nv_bfloat16* out, const __nv_bfloat16* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = __bfloat162float(input[i]);
        out[i] = __float2bfloat16(0.5f * x * (1.0f + erff(x * 0.70710678118654752f)));
    }
}

extern "C" void gelu_bf16(__nv_bfloat16* out, const __nv_bfloat16* input, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    gelu_bf16_kernel<<<blocks, threads>>>(out, input, N);
    cudaDeviceSynchronize();
}
