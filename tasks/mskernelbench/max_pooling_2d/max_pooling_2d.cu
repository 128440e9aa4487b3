// MSKernelBench baseline: max_pooling_2d (FP32). NCHW input, k x k windows with stride s and
// p padding cells per side; padding cells never win (only in-bounds cells are read). Output
// NCHW with H_out = (H + 2p - k) / s + 1, W_out likewise.
// Naive: one thread per output element.
#include <cuda_runtime.h>

#include <math.h>

__global__ void max_pooling_2d_kernel(const float* input, float* output, int C, int H, int W, int out_h, int out_w,
                                      int kernel_size, int stride, int padding) {
    int ow = blockIdx.x * blockDim.x + threadIdx.x;
    int oh = blockIdx.y * blockDim.y + threadIdx.y;
    int plane = blockIdx.z;  // n * C + c
    if (oh >= out_h || ow >= out_w) return;
    const float* x = input + (size_t)plane * H * W;
    float best = -INFINITY;
    for (int a = 0; a < kernel_size; ++a) {
        int h = oh * stride - padding + a;
        if (h < 0 || h >= H) continue;
        for (int b = 0; b < kernel_size; ++b) {
            int w = ow * stride - padding + b;
            if (w < 0 || w >= W) continue;
            best = fmaxf(best, x[(size_t)h * W + w]);
        }
    }
    output[((size_t)plane * out_h + oh) * out_w + ow] = best;
}

extern "C" void max_pooling_2d(const float* input, float* output, int N, int C, int H, int W, int kernel_size,
                               int stride, int padding) {
    int out_h = (H + 2 * padding - kernel_size) / stride + 1;
    int out_w = (W + 2 * padding - kernel_size) / stride + 1;
    dim3 threads(16, 16);
    dim3 blocks((out_w + threads.x - 1) / threads.x, (out_h + threads.y - 1) / threads.y, N * C);
    max_pooling_2d_kernel<<<blocks, threads>>>(input, output, C, H, W, out_h, out_w, kernel_size, stride, padding);
    cudaDeviceSynchronize();
}
