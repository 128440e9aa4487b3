// MSKernelBench baseline: batch_norm (FP32) over the columns of x(N,C), row-major.
// Naive: one thread per element; every thread recomputes the mean and the (two-pass,
// biased) variance of its column sequentially (N <= 1024, so no scratch memory).
#include <cuda_runtime.h>

__global__ void batch_norm_kernel(float* output, const float* input, const float* gamma, const float* beta,
                                  float epsilon, int N, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N * C) {
        int j = idx % C;
        float sum = 0.0f;
        for (int i = 0; i < N; ++i) {
            sum += input[i * C + j];
        }
        float mean = sum / N;
        float sq_sum = 0.0f;
        for (int i = 0; i < N; ++i) {
            float d = input[i * C + j] - mean;
            sq_sum += d * d;
        }
        float var = sq_sum / N;
        output[idx] = (input[idx] - mean) / sqrtf(var + epsilon) * gamma[j] + beta[j];
    }
}

extern "C" void batch_norm(float* output, const float* input, const float* gamma, const float* beta,
                           const float epsilon, const int N, const int C) {
    int threads = 256;
    int blocks = (N * C + threads - 1) / threads;
    batch_norm_kernel<<<blocks, threads>>>(output, input, gamma, beta, epsilon, N, C);
    cudaDeviceSynchronize();
}
