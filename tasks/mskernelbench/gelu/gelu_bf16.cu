// MSKernelBench baseline: gelu (BF16), exact form 0.5 x (1 + erf(x / sqrt 2)) in float, rounded once, as the benchmark's naive kernel: one block of 1024 threads striding over the array.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void gelu_bf16_kernel(__nv_bfloat16* out, const __nv_bfloat16* input, int N) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        float x = __bfloat162float(input[i]);
        out[i] = __float2bfloat16(0.5f * x * (1.0f + erff(x / sqrtf(2.0f))));
    }
}

extern "C" void gelu_bf16(__nv_bfloat16* out, const __nv_bfloat16* input, const int N) {
    gelu_bf16_kernel<<<1, 1024>>>(out, input, N);
    cudaDeviceSynchronize();
}
