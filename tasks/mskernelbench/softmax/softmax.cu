// MSKernelBench baseline: softmax (FP32) of each row of x(N,C), as the benchmark's naive kernel: one block of 1024 threads, one thread per row (max; exp stored in out and summed; out divided in place).
#include <cfloat>
#include <cuda_runtime.h>

__global__ void softmax_kernel(float* out, const float* input, int N, int C) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N) {
        const float* x = input + (size_t)row * C;
        float* y = out + (size_t)row * C;
        float row_max = -FLT_MAX;
        for (int c = 0; c < C; ++c) {
            if (x[c] > row_max) row_max = x[c];
        }
        float sum = 0.0f;
        for (int c = 0; c < C; ++c) {
            y[c] = expf(x[c] - row_max);
            sum += y[c];
        }
        for (int c = 0; c < C; ++c) {
            y[c] /= sum;
        }
    }
}

extern "C" void softmax(float* out, const float* input, int N, int C) {
    softmax_kernel<<<1, 1024>>>(out, input, N, C);
    cudaDeviceSynchronize();
}
