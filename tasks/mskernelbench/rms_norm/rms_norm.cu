// MSKernelBench baseline: rms_norm (FP32), Y = X / (RMS(X) + eps) * w + b.
// Naive: one thread per element; every thread recomputes the sum of squares
// sequentially (N <= 1024, so this stays small and needs no scratch memory).
#include <cuda_runtime.h>

__global__ void rms_norm_kernel(float* output, const float* input, const float* weight, const float* bias,
                                float epsilon, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float sum_sq = 0.0f;
        for (int j = 0; j < N; ++j) {
            sum_sq += input[j] * input[j];
        }
        float rms = sqrtf(sum_sq / N);
        output[i] = input[i] / (rms + epsilon) * weight[i] + bias[i];
    }
}

extern "C" void rms_norm(float* output, const float* input, const float* weight, const float* bias,
                         const float epsilon, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    rms_norm_kernel<<<blocks, threads>>>(output, input, weight, bias, epsilon, N);
    cudaDeviceSynchronize();
}
