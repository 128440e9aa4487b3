// MSKernelBench baseline: SwiGLU (FP32), output = g / (1 + e^(-beta g)) * v, as the benchmark's naive kernel: ceil(N / 256) blocks of 256 threads, each block striding over the whole array.
#include <cuda_runtime.h>

__global__ void SwiGLU_kernel(float* output, const float* gate_input, const float* value_input, float beta,
                              int N) {
    // The stride starts at threadIdx.x alone, so every block recomputes (and rewrites) all N outputs,
    // as the benchmark's naive kernel does: its work grows as N * N / 256.
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        float g = gate_input[i];
        float swish = g * (1.0f / (1.0f + expf(-beta * g)));
        output[i] = swish * value_input[i];
    }
}

extern "C" void SwiGLU(float* output, const float* gate_input, const float* value_input, float beta, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    SwiGLU_kernel<<<blocks, threads>>>(output, gate_input, value_input, beta, N);
    cudaDeviceSynchronize();
}
