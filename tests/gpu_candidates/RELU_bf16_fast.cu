// RELU (BF16): a grid-stride loop over 16-byte chunks (8 bf16 per load and per store) when both
// pointers are 16-byte aligned, with a scalar tail; scalar otherwise. Each value goes through float
// and back exactly as in the original: max(0, x) of a bf16 value is exact, so the output is identical.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#define RELU_THREADS 256
#define RELU_MAX_BLOCKS 2048

__device__ __forceinline__ float relu_optimized(float x) { return x > 0.0f ? x : 0.0f; }

// Caller guarantees 16-byte alignment of output and input.
__global__ __launch_bounds__(RELU_THREADS) void RELU_bf16_vec8_kernel_optimized(
    __nv_bfloat16* __restrict__ output, const __nv_bfloat16* __restrict__ input, int N) {
    const uint4* in8 = reinterpret_cast<const uint4*>(input);
    uint4* out8 = reinterpret_cast<uint4*>(output);
    const int chunks = N / 8;
    const int stride = gridDim.x * blockDim.x;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = tid; i < chunks; i += stride) {
        const uint4 v = in8[i];
        uint4 r;
        const __nv_bfloat162* v2 = reinterpret_cast<const __nv_bfloat162*>(&v);
        __nv_bfloat162* r2 = reinterpret_cast<__nv_bfloat162*>(&r);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float2 f = __bfloat1622float2(v2[k]);
            r2[k] = __floats2bfloat162_rn(relu_optimized(f.x), relu_optimized(f.y));
        }
        out8[i] = r;
    }
    for (int i = chunks * 8 + tid; i < N; i += stride) {  // the last N % 8 elements
        output[i] = __float2bfloat16(relu_optimized(__bfloat162float(input[i])));
    }
}

__global__ __launch_bounds__(RELU_THREADS) void RELU_bf16_scalar_kernel_optimized(
    __nv_bfloat16* __restrict__ output, const __nv_bfloat16* __restrict__ input, int N) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) {
        output[i] = __float2bfloat16(relu_optimized(__bfloat162float(input[i])));
    }
}

extern "C" void RELU_bf16_optimized(__nv_bfloat16* output, const __nv_bfloat16* input, int N) {
    if (N > 0) {
        const bool aligned = (((uintptr_t)output | (uintptr_t)input) % 16) == 0;
        const int work = aligned ? (N + 7) / 8 : N;
        int blocks = (work + RELU_THREADS - 1) / RELU_THREADS;
        if (blocks > RELU_MAX_BLOCKS) blocks = RELU_MAX_BLOCKS;
        if (aligned) {
            RELU_bf16_vec8_kernel_optimized<<<blocks, RELU_THREADS>>>(output, input, N);
        } else {
            RELU_bf16_scalar_kernel_optimized<<<blocks, RELU_THREADS>>>(output, input, N);
        }
    }
    cudaDeviceSynchronize();
}
