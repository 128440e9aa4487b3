// MSKernelBench baseline: selu (BF16), lambda * x if x > 0 else lambda * alpha * (e^x - 1),
// computed in float and rounded once. Naive: one thread per element.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void selu_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input, int N, float alpha,
                                 float lambda) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = __bfloat162float(input[i]);
        output[i] = __float2bfloat16(x > 0.0f ? lambda * x : lambda * alpha * (expf(x) - 1.0f));
    }
}

extern "C" void selu_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, const int N, float alpha,
                          float lambda) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    selu_bf16_kernel<<<blocks, threads>>>(output, input, N, alpha, lambda);
    cudaDeviceSynchronize();
}
