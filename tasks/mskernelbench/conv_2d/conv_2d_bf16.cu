// MSKernelBench baseline: conv_2d (BF16), "valid" 2D cross-correlation, row-major, as the benchmark's naive kernel: one thread per output in 16 x 16 blocks, a float sum over the kernel window read from global memory, one rounding to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void conv_2d_bf16_kernel(const __nv_bfloat16* input, const __nv_bfloat16* kernel, __nv_bfloat16* output,
                                    int input_rows, int input_cols, int kernel_rows, int kernel_cols) {
    int out_rows = input_rows - kernel_rows + 1;
    int out_cols = input_cols - kernel_cols + 1;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < out_rows && col < out_cols) {
        float sum = 0.0f;
        for (int m = 0; m < kernel_rows; ++m) {
            for (int n = 0; n < kernel_cols; ++n) {
                sum += __bfloat162float(input[(size_t)(row + m) * input_cols + (col + n)]) *
                       __bfloat162float(kernel[m * kernel_cols + n]);
            }
        }
        output[(size_t)row * out_cols + col] = __float2bfloat16(sum);
    }
}

extern "C" void conv_2d_bf16(const __nv_bfloat16* input, const __nv_bfloat16* kernel, __nv_bfloat16* output,
                             int input_rows, int input_cols, int kernel_rows, int kernel_cols) {
    int out_rows = input_rows - kernel_rows + 1;
    int out_cols = input_cols - kernel_cols + 1;
    dim3 threads(16, 16);
    dim3 blocks((out_cols + threads.x - 1) / threads.x, (out_rows + threads.y - 1) / threads.y);
    conv_2d_bf16_kernel<<<blocks, threads>>>(input, kernel, output, input_rows, input_cols, kernel_rows, kernel_cols);
    cudaDeviceSynchronize();
}
