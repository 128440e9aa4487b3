// MSKernelBench baseline: conv_2d (FP32), "valid" 2D cross-correlation, row-major, as the benchmark's naive kernel: one thread per output in 16 x 16 blocks, a float sum over the kernel window read from global memory.
#include <cuda_runtime.h>

__global__ void conv_2d_kernel(const float* input, const float* kernel, float* output, int input_rows,
                               int input_cols, int kernel_rows, int kernel_cols) {
    int out_rows = input_rows - kernel_rows + 1;
    int out_cols = input_cols - kernel_cols + 1;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < out_rows && col < out_cols) {
        float sum = 0.0f;
        for (int m = 0; m < kernel_rows; ++m) {
            for (int n = 0; n < kernel_cols; ++n) {
                sum += input[(size_t)(row + m) * input_cols + (col + n)] * kernel[m * kernel_cols + n];
            }
        }
        output[(size_t)row * out_cols + col] = sum;
    }
}

extern "C" void conv_2d(const float* input, const float* kernel, float* output, int input_rows, int input_cols,
                        int kernel_rows, int kernel_cols) {
    int out_rows = input_rows - kernel_rows + 1;
    int out_cols = input_cols - kernel_cols + 1;
    dim3 threads(16, 16);
    dim3 blocks((out_cols + threads.x - 1) / threads.x, (out_rows + threads.y - 1) / threads.y);
    conv_2d_kernel<<<blocks, threads>>>(input, kernel, output, input_rows, input_cols, kernel_rows, kernel_cols);
    cudaDeviceSynchronize();
}
