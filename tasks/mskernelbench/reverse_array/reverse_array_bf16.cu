// reverse_array (BF16): output[i] = input[N-1-i]; follows the benchmark's naive kernel: (N+1)/2 threads in 256-thread blocks, each swapping one pair (input only read).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void reverse_array_bf16_kernel(__nv_bfloat16* output, __nv_bfloat16* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > N / 2) return;  // past the middle; i = N/2, when launched, rewrites the middle pair with the same values
    int j = N - 1 - i;
    __nv_bfloat16 front = input[i];
    __nv_bfloat16 back = input[j];
    output[i] = back;
    output[j] = front;
}

extern "C" void reverse_array_bf16(__nv_bfloat16* output, __nv_bfloat16* input, int N) {
    int pairs = (N + 1) / 2;
    int threads = 256;
    int blocks = (pairs + threads - 1) / threads;
    reverse_array_bf16_kernel<<<blocks, threads>>>(output, input, N);
    cudaDeviceSynchronize();
}
