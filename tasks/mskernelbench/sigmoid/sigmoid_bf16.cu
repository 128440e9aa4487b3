// MSKernelBench baseline: sigmoid (BF16), 1 / (1 + e^-x), computed in float and rounded once.
// Naive: one thread per element.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void sigmoid_bf16_kernel(__nv_bfloat16* out, const __nv_bfloat16* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = __bfloat162float(input[i]);
        out[i] = __float2bfloat16(1.0f / (1.0f + expf(-x)));
    }
}

extern "C" void sigmoid_bf16(__nv_bfloat16* out, const __nv_bfloat16* input, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    sigmoid_bf16_kernel<<<blocks, threads>>>(out, input, N);
    cudaDeviceSynchronize();
}
