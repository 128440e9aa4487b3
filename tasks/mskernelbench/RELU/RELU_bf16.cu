// MSKernelBench baseline: RELU (BF16). Naive: one thread per element.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void RELU_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = __bfloat162float(input[i]);
        output[i] = __float2bfloat16(x > 0.0f ? x : 0.0f);
    }
}

extern "C" void RELU_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    RELU_bf16_kernel<<<blocks, threads>>>(output, input, N);
    cudaDeviceSynchronize();
}
