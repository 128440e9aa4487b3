// MSKernelBench baseline: SwiGLU (FP32), output = g / (1 + e^(-beta g)) * v. Naive: one thread
// per element.
#include <cuda_runtime.h>

__global__ void SwiGLU_kernel(float* output, const float* gate_input, const float* value_input, float beta,
                              int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float g = gate_input[i];
        float swish = g / (1.0f + expf(-beta * g));
        output[i] = swish * value_input[i];
    }
}

extern "C" void SwiGLU(float* output, const float* gate_input, const float* value_input, float beta, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    SwiGLU_kernel<<<blocks, threads>>>(output, gate_input, value_input, beta, N);
    cudaDeviceSynchronize();
}
