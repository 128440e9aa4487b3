// MSKernelBench baseline: max_pooling_2d (BF16). NCHW input, k x k windows with stride s and
// p padding cells per side; padding cells never win (only in-bounds cells are read). Output
// NCHW with H_out = (H + 2p - k) / s + 1, W_out likewise. Compared as float (exact for
// bf16), so the output is a copy of one input value.
// Naive: one thread per output element.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>

__global__ void max_pooling_2d_bf16_kernel(const __nv_bfloat16* input, __nv_bfloat16* output, int C, int H, int W,
                                           int out_h, int out_w, int kernel_size, int stride, int padding) {
    int ow = blockIdx.x * blockDim.x + threadIdx.x;
    int oh = blockIdx.y * blockDim.y + threadIdx.y;
    int plane = blockIdx.z;  // n * C + c
    if (oh >= out_h || ow >= out_w) return;
    const __nv_bfloat16* x = input + (size_t)plane * H * W;
    float best = -INFINITY;
    for (int a = 0; a < kernel_size; ++a) {
        int h = oh * stride - padding + a;
        if (h < 0 || h >= H) continue;
        for (int b = 0; b < kernel_size; ++b) {
            int w = ow * stride - padding + b;
            if (w < 0 || w >= W) continue;
            best = fmaxf(best, __bfloat162float(x[(size_t)h * W + w]));
        }
    }
    output[((size_t)plane * out_h + oh) * out_w + ow] = __float2bfloat16(best);
}

extern "C" void max_pooling_2d_bf16(const __nv_bfloat16* input, __nv_bfloat16* output, int N, int C, int H, int W,
                                    int kernel_size, int stride, int padding) {
    int out_h = (H + 2 * padding - kernel_size) / stride + 1;
    int out_w = (W + 2 * padding - kernel_size) / stride + 1;
    dim3 threads(16, 16);
    dim3 blocks((out_w + threads.x - 1) / threads.x, (out_h + threads.y - 1) / threads.y, N * C);
    max_pooling_2d_bf16_kernel<<<blocks, threads>>>(input, output, C, H, W, out_h, out_w, kernel_size, stride,
                                                    padding);
    cudaDeviceSynchronize();
}
