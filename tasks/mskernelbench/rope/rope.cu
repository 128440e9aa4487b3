// MSKernelBench baseline: rope (FP32), each interleaved pair (x[m, 2k], x[m, 2k+1]) rotated by m * base^(-2k/D), as the benchmark's naive kernel: one thread per pair, blocks of 256.
#include <cuda_runtime.h>

__global__ void rope_kernel(float* output, const float* input, int M, int D, float base) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    int half = D / 2;
    if (p < M * half) {
        int m = p / half, k = p % half;
        int i = m * D + 2 * k;
        float theta = powf(base, -2.0f * (float)k / (float)D);
        float phi = (float)m * theta;
        float c = cosf(phi), s = sinf(phi);
        float x0 = input[i], x1 = input[i + 1];
        output[i] = x0 * c - x1 * s;
        output[i + 1] = x0 * s + x1 * c;
    }
}

extern "C" void rope(float* output, const float* input, int M, int D, float base) {
    int threads = 256;
    int pairs = M * (D / 2);
    int blocks = (pairs + threads - 1) / threads;
    rope_kernel<<<blocks, threads>>>(output, input, M, D, base);
    cudaDeviceSynchronize();
}
