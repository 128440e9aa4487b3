// MSKernelBench baseline: silu_and_mul (BF16), out[b, j] = silu(in[b, j]) * in[b, D + j] for
// in (B, 2D) and out (B, D), row-major; computed in float and rounded once. Naive: one thread
// per output element.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void silu_and_mul_bf16_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int32_t B, int32_t D) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (int64_t)B * D) {
        int64_t b = i / D, j = i % D;
        float x = __bfloat162float(in[b * 2 * D + j]);
        float g = __bfloat162float(in[b * 2 * D + D + j]);
        out[i] = __float2bfloat16(x / (1.0f + expf(-x)) * g);
    }
}

extern "C" void silu_and_mul_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int32_t B, int32_t D) {
    int threads = 256;
    int64_t total = (int64_t)B * D;
    int blocks = (int)((total + threads - 1) / threads);
    silu_and_mul_bf16_kernel<<<blocks, threads>>>(in, out, B, D);
    cudaDeviceSynchronize();
}
