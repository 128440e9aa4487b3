// MSKernelBench baseline: silu_and_mul (BF16), out[b, j] = silu(in[b, j]) * in[b, D + j] in float, rounded once, as the benchmark's naive kernel: min(B, 256) blocks of 128 threads, blocks striding over rows, threads over columns.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void silu_and_mul_bf16_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int32_t B, int32_t D) {
    for (int32_t b = blockIdx.x; b < B; b += gridDim.x) {
        const __nv_bfloat16* x = in + (size_t)b * 2 * D;  // the first D columns of row b; the gate follows
        const __nv_bfloat16* g = x + D;
        __nv_bfloat16* y = out + (size_t)b * D;
        for (int32_t j = threadIdx.x; j < D; j += blockDim.x) {
            float v = __bfloat162float(x[j]);
            y[j] = __float2bfloat16(v / (1.0f + expf(-v)) * __bfloat162float(g[j]));
        }
    }
}

extern "C" void silu_and_mul_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int32_t B, int32_t D) {
    int blocks = B < 256 ? B : 256;
    silu_and_mul_bf16_kernel<<<blocks, 128>>>(in, out, B, D);
    cudaDeviceSynchronize();
}
