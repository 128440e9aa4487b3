// MSKernelBench baseline: softmax (FP32) over each row of x(N,C), row-major.
// Naive: one thread per row, three passes (max, sum of exp, normalize).
#include <cuda_runtime.h>
#include <math.h>

__global__ void softmax_kernel(float* out, const float* input, int N, int C) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N) {
        const float* x = input + (size_t)row * C;
        float* y = out + (size_t)row * C;
        float max_val = -INFINITY;
        for (int c = 0; c < C; ++c) {
            max_val = fmaxf(max_val, x[c]);
        }
        float sum = 0.0f;
        for (int c = 0; c < C; ++c) {
            sum += expf(x[c] - max_val);
        }
        for (int c = 0; c < C; ++c) {
            y[c] = expf(x[c] - max_val) / sum;
        }
    }
}

extern "C" void softmax(float* out, const float* input, int N, int C) {
    int threads = 128;
    int blocks = (N + threads - 1) / threads;
    softmax_kernel<<<blocks, threads>>>(out, input, N, C);
    cudaDeviceSynchronize();
}
