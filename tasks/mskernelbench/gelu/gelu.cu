// MSKernelBench baseline: gelu (FP32), exact form 0.5 x (1 + erf(x / sqrt 2)), as the benchmark's naive kernel: one block of 1024 threads striding over the array.
#include <cuda_runtime.h>

__global__ void gelu_kernel(float* output, const float* input, int N) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        float x = input[i];
        output[i] = 0.5f * x * (1.0f + erff(x / sqrtf(2.0f)));
    }
}

extern "C" void gelu(float* output, const float* input, const int N) {
    gelu_kernel<<<1, 1024>>>(output, input, N);
    cudaDeviceSynchronize();
}
