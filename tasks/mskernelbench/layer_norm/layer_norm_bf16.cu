// MSKernelBench baseline: layer_norm (BF16), Y = (x - mean) / sqrt(var + eps) * w + b in float, rounded once, as the benchmark's naive kernels: grid-stride sums atomically added into scratch the call allocates, mean and variance finished on the host between the kernels.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void layer_norm_sum_bf16_kernel(const __nv_bfloat16* input, float* sum, int N) {
    float partial = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
        partial += __bfloat162float(input[i]);
    }
    if (partial != 0.0f) atomicAdd(sum, partial);
}

__global__ void layer_norm_sq_dev_bf16_kernel(const __nv_bfloat16* input, const float* mean, float* sum, int N) {
    float m = *mean, partial = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
        float d = __bfloat162float(input[i]) - m;
        partial += d * d;
    }
    if (partial != 0.0f) atomicAdd(sum, partial);
}

__global__ void layer_norm_apply_bf16_kernel(__nv_bfloat16* output, const __nv_bfloat16* input,
                                             const __nv_bfloat16* weight, const __nv_bfloat16* bias,
                                             const float* mean, const float* var, float epsilon, int N) {
    float m = *mean, sd = sqrtf(*var + epsilon);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
        float x_hat = (__bfloat162float(input[i]) - m) / sd;
        output[i] = __float2bfloat16(__bfloat162float(weight[i]) * x_hat + __bfloat162float(bias[i]));
    }
}

extern "C" void layer_norm_bf16(__nv_bfloat16* output, const __nv_bfloat16* input, const __nv_bfloat16* weight,
                                const __nv_bfloat16* bias, const float epsilon, const int N) {
    float *sum, *sq_sum, *mean, *var;  // device scalars
    cudaMalloc(&sum, sizeof(float));
    cudaMalloc(&sq_sum, sizeof(float));
    cudaMalloc(&mean, sizeof(float));
    cudaMalloc(&var, sizeof(float));
    const float zero = 0.0f;
    cudaMemcpy(sum, &zero, sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(sq_sum, &zero, sizeof(float), cudaMemcpyHostToDevice);
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;

    layer_norm_sum_bf16_kernel<<<blocks, threads>>>(input, sum, N);
    cudaDeviceSynchronize();
    float host_value;
    cudaMemcpy(&host_value, sum, sizeof(float), cudaMemcpyDeviceToHost);
    host_value /= N;
    cudaMemcpy(mean, &host_value, sizeof(float), cudaMemcpyHostToDevice);

    layer_norm_sq_dev_bf16_kernel<<<blocks, threads>>>(input, mean, sq_sum, N);
    cudaDeviceSynchronize();
    cudaMemcpy(&host_value, sq_sum, sizeof(float), cudaMemcpyDeviceToHost);
    host_value /= N;
    cudaMemcpy(var, &host_value, sizeof(float), cudaMemcpyHostToDevice);

    layer_norm_apply_bf16_kernel<<<blocks, threads>>>(output, input, weight, bias, mean, var, epsilon, N);
    cudaDeviceSynchronize();
    cudaFree(sum);
    cudaFree(sq_sum);
    cudaFree(mean);
    cudaFree(var);
}
