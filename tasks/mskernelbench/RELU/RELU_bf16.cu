// MSKernelBench baseline: RELU (BF16), output = max(0, x) in float, as the benchmark's naive kernel: one block of 1024 threads striding over the array.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void RELU_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input, int N) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        output[i] = __float2bfloat16(fmaxf(0.0f, __bfloat162float(input[i])));
    }
}

extern "C" void RELU_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, int N) {
    RELU_bf16_kernel<<<1, 1024>>>(output, input, N);
    cudaDeviceSynchronize();
}
