// Tolerance test (gelu FP32): the tanh approximation of GELU,
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), instead of the exact erf form the
// task defines. A real optimization in some frameworks, but a different function.
// Expected: incorrect (FP32 tolerance 1e-5 + 1e-5 |y|); the largest deviations, up to
// 4.7e-4, are near |x| = 2.7, and many elements fail. (In BF16 it would pass.)
#include <cuda_runtime.h>

__global__ void gelu_kernel_optimized(float* output, const float* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = input[i];
        output[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
}

extern "C" void gelu_optimized(float* output, const float* input, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    gelu_kernel_optimized<<<blocks, threads>>>(output, input, N);
    cudaDeviceSynchronize();
}
