// MSKernelBench baseline: conv_1d (FP32), "valid" 1D cross-correlation (input_size - kernel_size + 1 outputs), as the benchmark's naive kernel: one thread per output in blocks of 256, a float sum over the kernel read from global memory.
#include <cuda_runtime.h>

__global__ void conv_1d_kernel(const float* input, const float* kernel, float* output, int input_size,
                               int kernel_size) {
    int out_size = input_size - kernel_size + 1;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_size) {
        float sum = 0.0f;
        for (int j = 0; j < kernel_size; ++j) {
            sum += input[i + j] * kernel[j];
        }
        output[i] = sum;
    }
}

extern "C" void conv_1d(const float* input, const float* kernel, float* output, int input_size, int kernel_size) {
    int out_size = input_size - kernel_size + 1;
    int threads = 256;
    int blocks = (out_size + threads - 1) / threads;
    conv_1d_kernel<<<blocks, threads>>>(input, kernel, output, input_size, kernel_size);
    cudaDeviceSynchronize();
}
