// MSKernelBench baseline: row_tanh (BF16), tanh of every element, computed in float and rounded
// once. Naive: one thread per element.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void row_tanh_bf16_kernel(__nv_bfloat16* out, const __nv_bfloat16* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        out[i] = __float2bfloat16(tanhf(__bfloat162float(input[i])));
    }
}

extern "C" void row_tanh_bf16(__nv_bfloat16* out, const __nv_bfloat16* input, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    row_tanh_bf16_kernel<<<blocks, threads>>>(out, input, N);
    cudaDeviceSynchronize();
}
