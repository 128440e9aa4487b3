// MSKernelBench baseline: conv_1d (BF16), "valid" 1D cross-correlation (input_size - kernel_size + 1 outputs), as the benchmark's naive kernel: one thread per output in blocks of 256, a float sum over the kernel read from global memory, one rounding to bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void conv_1d_bf16_kernel(const __nv_bfloat16* input, const __nv_bfloat16* kernel, __nv_bfloat16* output,
                                    int input_size, int kernel_size) {
    int out_size = input_size - kernel_size + 1;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_size) {
        float sum = 0.0f;
        for (int j = 0; j < kernel_size; ++j) {
            sum += __bfloat162float(input[i + j]) * __bfloat162float(kernel[j]);
        }
        output[i] = __float2bfloat16(sum);
    }
}

extern "C" void conv_1d_bf16(const __nv_bfloat16* input, const __nv_bfloat16* kernel, __nv_bfloat16* output,
                             int input_size, int kernel_size) {
    int out_size = input_size - kernel_size + 1;
    int threads = 256;
    int blocks = (out_size + threads - 1) / threads;
    conv_1d_bf16_kernel<<<blocks, threads>>>(input, kernel, output, input_size, kernel_size);
    cudaDeviceSynchronize();
}
