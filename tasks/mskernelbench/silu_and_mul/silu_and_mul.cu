// MSKernelBench baseline: silu_and_mul (FP32), out[b, j] = silu(in[b, j]) * in[b, D + j] for
// in (B, 2D) and out (B, D), row-major. Naive: one thread per output element.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void silu_and_mul_kernel(const float* in, float* out, int32_t B, int32_t D) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (int64_t)B * D) {
        int64_t b = i / D, j = i % D;
        float x = in[b * 2 * D + j];
        float g = in[b * 2 * D + D + j];
        out[i] = x / (1.0f + expf(-x)) * g;
    }
}

extern "C" void silu_and_mul(const float* in, float* out, int32_t B, int32_t D) {
    int threads = 256;
    int64_t total = (int64_t)B * D;
    int blocks = (int)((total + threads - 1) / threads);
    silu_and_mul_kernel<<<blocks, threads>>>(in, out, B, D);
    cudaDeviceSynchronize();
}
