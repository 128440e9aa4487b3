// MSKernelBench baseline: silu_and_mul (FP32), out[b, j] = silu(in[b, j]) * in[b, D + j], as the benchmark's naive kernel: min(B, 256) blocks of 128 threads, blocks striding over rows, threads over columns.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void silu_and_mul_kernel(const float* in, float* out, int32_t B, int32_t D) {
    for (int32_t b = blockIdx.x; b < B; b += gridDim.x) {
        const float* x = in + (size_t)b * 2 * D;  // the first D columns of row b; the gate follows
        const float* g = x + D;
        float* y = out + (size_t)b * D;
        for (int32_t j = threadIdx.x; j < D; j += blockDim.x) {
            float v = x[j];
            y[j] = v / (1.0f + expf(-v)) * g[j];
        }
    }
}

extern "C" void silu_and_mul(const float* in, float* out, int32_t B, int32_t D) {
    int blocks = B < 256 ? B : 256;
    silu_and_mul_kernel<<<blocks, 128>>>(in, out, B, D);
    cudaDeviceSynchronize();
}
