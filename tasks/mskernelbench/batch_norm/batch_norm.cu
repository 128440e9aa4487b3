// MSKernelBench baseline: batch_norm (FP32) over the columns of x(N,C), as the benchmark's naive kernels: per-column sum and sum of squares (one thread per column, var = E[x^2] - mean^2) into scratch allocated by the call, then one thread per element.
#include <cuda_runtime.h>

__global__ void batch_norm_stats_kernel(float* mean, float* var, const float* input, int N, int C) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < C) {
        float sum = 0.0f, sum_sq = 0.0f;
        for (int i = 0; i < N; ++i) {
            float v = input[i * C + j];
            sum += v;
            sum_sq += v * v;
        }
        float m = sum / N;
        mean[j] = m;
        var[j] = sum_sq / N - m * m;
    }
}

__global__ void batch_norm_apply_kernel(float* output, const float* input, const float* mean, const float* var,
                                        const float* gamma, const float* beta, float epsilon, int N, int C) {
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < N * C; k += blockDim.x * gridDim.x) {
        int j = k % C;
        float x_hat = (input[k] - mean[j]) / sqrtf(var[j] + epsilon);
        output[k] = gamma[j] * x_hat + beta[j];
    }
}

extern "C" void batch_norm(float* output, const float* input, const float* gamma, const float* beta,
                           const float epsilon, const int N, const int C) {
    float *mean, *var;
    cudaMalloc(&mean, C * sizeof(float));
    cudaMalloc(&var, C * sizeof(float));
    int threads = 256;
    batch_norm_stats_kernel<<<(C + threads - 1) / threads, threads>>>(mean, var, input, N, C);
    cudaDeviceSynchronize();
    batch_norm_apply_kernel<<<(N * C + threads - 1) / threads, threads>>>(output, input, mean, var, gamma, beta,
                                                                          epsilon, N, C);
    cudaDeviceSynchronize();
    cudaFree(mean);
    cudaFree(var);
}
