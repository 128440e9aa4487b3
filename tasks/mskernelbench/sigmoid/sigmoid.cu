// MSKernelBench baseline: sigmoid (FP32), 1 / (1 + e^-x), as the benchmark's naive kernel: one block of 1024 threads striding over the array.
#include <cuda_runtime.h>

__global__ void sigmoid_kernel(float* out, const float* input, int N) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        out[i] = 1.0f / (1.0f + expf(-input[i]));
    }
}

extern "C" void sigmoid(float* out, const float* input, const int N) {
    sigmoid_kernel<<<1, 1024>>>(out, input, N);
    cudaDeviceSynchronize();
}
