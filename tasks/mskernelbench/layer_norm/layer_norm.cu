// MSKernelBench baseline: layer_norm (FP32), Y = (x - mean) / sqrt(var + eps) * w + b.
// Naive: one thread per element; every thread recomputes the mean and the (two-pass,
// biased) variance sequentially (N <= 1024, so no scratch memory).
#include <cuda_runtime.h>

__global__ void layer_norm_kernel(float* output, const float* input, const float* weight, const float* bias,
                                  float epsilon, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float sum = 0.0f;
        for (int j = 0; j < N; ++j) {
            sum += input[j];
        }
        float mean = sum / N;
        float sq_sum = 0.0f;
        for (int j = 0; j < N; ++j) {
            float d = input[j] - mean;
            sq_sum += d * d;
        }
        float var = sq_sum / N;
        output[i] = (input[i] - mean) / sqrtf(var + epsilon) * weight[i] + bias[i];
    }
}

extern "C" void layer_norm(float* output, const float* input, const float* weight, const float* bias,
                           const float epsilon, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    layer_norm_kernel<<<blocks, threads>>>(output, input, weight, bias, epsilon, N);
    cudaDeviceSynchronize();
}
