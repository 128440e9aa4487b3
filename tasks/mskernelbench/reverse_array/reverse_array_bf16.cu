// MSKernelBench baseline: reverse_array (BF16), output[i] = input[N - 1 - i]. Naive: one thread
// per output element; input is only read.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void reverse_array_bf16_kernel(__nv_bfloat16* output, __nv_bfloat16* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        output[i] = input[N - 1 - i];
    }
}

extern "C" void reverse_array_bf16(__nv_bfloat16* output, __nv_bfloat16* input, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    reverse_array_bf16_kernel<<<blocks, threads>>>(output, input, N);
    cudaDeviceSynchronize();
}
