// MSKernelBench baseline: selu (BF16), lambda * alpha * (e^x - 1) for x < 0, else lambda * x, in float and rounded once, as the benchmark's naive kernel: one block of 1024 threads striding over the array.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void selu_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input, int N, float alpha,
                                 float lambda) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        float x = __bfloat162float(input[i]);
        output[i] = __float2bfloat16(x < 0.0f ? lambda * alpha * (expf(x) - 1.0f) : lambda * x);
    }
}

extern "C" void selu_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, const int N, float alpha,
                          float lambda) {
    selu_bf16_kernel<<<1, 1024>>>(output, input, N, alpha, lambda);
    cudaDeviceSynchronize();
}
