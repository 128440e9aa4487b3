// MSKernelBench baseline: RELU (FP32), output = max(0, x), as the benchmark's naive kernel: one block of 1024 threads striding over the array.
#include <cuda_runtime.h>

__global__ void RELU_kernel(float* output, const float* input, int N) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        output[i] = fmaxf(0.0f, input[i]);
    }
}

extern "C" void RELU(float* output, const float* input, int N) {
    RELU_kernel<<<1, 1024>>>(output, input, N);
    cudaDeviceSynchronize();
}
