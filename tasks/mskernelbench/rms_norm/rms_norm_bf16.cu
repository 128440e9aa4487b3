// MSKernelBench baseline: rms_norm (BF16), Y = X / sqrt(mean(X^2) + eps) * w + b in float, rounded once, as the benchmark's naive kernels: a grid-stride sum of squares atomically added into a scratch float the call allocates and zeroes, then a grid-stride normalization.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void rms_norm_sum_sq_bf16_kernel(const __nv_bfloat16* input, float* sum_sq, int N) {
    float partial = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
        float v = __bfloat162float(input[i]);
        partial += v * v;
    }
    if (partial != 0.0f) atomicAdd(sum_sq, partial);
}

__global__ void rms_norm_apply_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input, const float* sum_sq,
                                           const __nv_bfloat16* weight, const __nv_bfloat16* bias, float epsilon,
                                           int N) {
    float rms = sqrtf(*sum_sq / (float)N + epsilon);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
        float y = __bfloat162float(weight[i]) * (__bfloat162float(input[i]) / rms) + __bfloat162float(bias[i]);
        output[i] = __float2bfloat16(y);
    }
}

extern "C" void rms_norm_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, const __nv_bfloat16* weight,
                              const __nv_bfloat16* bias, const float epsilon, const int N) {
    float* sum_sq;
    cudaMalloc(&sum_sq, sizeof(float));
    cudaMemset(sum_sq, 0, sizeof(float));
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    rms_norm_sum_sq_bf16_kernel<<<blocks, threads>>>(input, sum_sq, N);
    cudaDeviceSynchronize();
    rms_norm_apply_bf16_kernel<<<blocks, threads>>>(output, input, sum_sq, weight, bias, epsilon, N);
    cudaDeviceSynchronize();
    cudaFree(sum_sq);
}
