// MSKernelBench baseline: leaky_RELU (BF16), x if x > 0 else alpha * x, computed in float and
// rounded once. Naive: one thread per element.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void leaky_RELU_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input, int N, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = __bfloat162float(input[i]);
        output[i] = __float2bfloat16(x > 0.0f ? x : x * alpha);
    }
}

extern "C" void leaky_RELU_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, const int N, float alpha) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    leaky_RELU_bf16_kernel<<<blocks, threads>>>(output, input, N, alpha);
    cudaDeviceSynchronize();
}
