// MSKernelBench baseline: rms_norm (FP32), Y = X / sqrt(mean(X^2) + eps) * w + b, as the benchmark's naive kernels: a grid-stride sum of squares atomically added into a scratch float the call allocates and zeroes, then a grid-stride normalization.
#include <cuda_runtime.h>

__global__ void rms_norm_sum_sq_kernel(const float* input, float* sum_sq, int N) {
    float partial = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
        partial += input[i] * input[i];
    }
    if (partial != 0.0f) atomicAdd(sum_sq, partial);
}

__global__ void rms_norm_apply_kernel(float* output, const float* input, const float* sum_sq, const float* weight,
                                      const float* bias, float epsilon, int N) {
    float rms = sqrtf(*sum_sq / (float)N + epsilon);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
        output[i] = weight[i] * (input[i] / rms) + bias[i];
    }
}

extern "C" void rms_norm(float* output, const float* input, const float* weight, const float* bias,
                         const float epsilon, const int N) {
    float* sum_sq;
    cudaMalloc(&sum_sq, sizeof(float));
    cudaMemset(sum_sq, 0, sizeof(float));
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    rms_norm_sum_sq_kernel<<<blocks, threads>>>(input, sum_sq, N);
    cudaDeviceSynchronize();
    rms_norm_apply_kernel<<<blocks, threads>>>(output, input, sum_sq, weight, bias, epsilon, N);
    cudaDeviceSynchronize();
    cudaFree(sum_sq);
}
