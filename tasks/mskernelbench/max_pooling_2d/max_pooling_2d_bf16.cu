// MSKernelBench baseline: max_pooling_2d (BF16), NCHW max over k x k windows (stride s, p padding cells per side that never win), as the benchmark's naive kernel: 16 x 16 threads per block over (w_out, h_out), one grid layer per (n, c) plane, each thread scanning the in-bounds part of its window in float (exact for bf16).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <float.h>

__global__ void max_pooling_2d_bf16_kernel(const __nv_bfloat16* input, __nv_bfloat16* output, int N, int C, int H,
                                           int W, int out_h, int out_w, int kernel_size, int stride, int padding) {
    int plane = blockIdx.z;  // n * C + c
    int oh = blockIdx.y * blockDim.y + threadIdx.y;
    int ow = blockIdx.x * blockDim.x + threadIdx.x;
    if (oh >= out_h || ow >= out_w || plane >= N * C) return;
    int top = oh * stride - padding;
    int left = ow * stride - padding;
    int bottom = min(min(top + kernel_size, H + padding), H);
    int right = min(min(left + kernel_size, W + padding), W);
    const __nv_bfloat16* x = input + (size_t)plane * H * W;
    float best = -FLT_MAX;
    for (int h = max(top, 0); h < bottom; ++h) {
        for (int w = max(left, 0); w < right; ++w) {
            float v = __bfloat162float(x[h * W + w]);
            if (v > best) best = v;
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
    max_pooling_2d_bf16_kernel<<<blocks, threads>>>(input, output, N, C, H, W, out_h, out_w, kernel_size, stride,
                                                    padding);
    cudaDeviceSynchronize();
}
