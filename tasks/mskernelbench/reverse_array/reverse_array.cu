// reverse_array (FP32): output[i] = input[N-1-i]; follows the benchmark's naive kernel: (N+1)/2 threads in 256-thread blocks, each swapping one pair (input only read).
#include <cuda_runtime.h>

__global__ void reverse_array_kernel(float* output, float* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > N / 2) return;  // past the middle; i = N/2, when launched, rewrites the middle pair with the same values
    int j = N - 1 - i;
    float front = input[i];
    float back = input[j];
    output[i] = back;
    output[j] = front;
}

extern "C" void reverse_array(float* output, float* input, int N) {
    int pairs = (N + 1) / 2;
    int threads = 256;
    int blocks = (pairs + threads - 1) / threads;
    reverse_array_kernel<<<blocks, threads>>>(output, input, N);
    cudaDeviceSynchronize();
}
