// MSKernelBench baseline: leaky_RELU (BF16), alpha * x (float, rounded once) for x < 0, else x, as the benchmark's naive kernel: one block of 1024 threads striding over the array.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void leaky_RELU_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input, int N, float alpha) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        float x = __bfloat162float(input[i]);
        output[i] = x < 0.0f ? __float2bfloat16(alpha * x) : input[i];
    }
}

extern "C" void leaky_RELU_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, const int N, float alpha) {
    leaky_RELU_bf16_kernel<<<1, 1024>>>(output, input, N, alpha);
    cudaDeviceSynchronize();
}
