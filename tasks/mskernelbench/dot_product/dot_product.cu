// dot_product (FP32): loss += sum X[i]*Y[i]; follows the benchmark's naive kernel (grid-stride partial sums, one atomicAdd per thread into the zeroed loss).
#include <cuda_runtime.h>

__global__ void dot_product_kernel(float* loss, const float* X, const float* Y, const int N) {
    int first = blockIdx.x * blockDim.x + threadIdx.x;
    int step = blockDim.x * gridDim.x;
    float partial = 0.0f;
    for (int i = first; i < N; i += step) {
        if (Y[i] != 0.0f) partial += X[i] * Y[i];  // zero products skipped, as in the benchmark
    }
    if (partial != 0.0f) atomicAdd(loss, partial);
}

// loss[0] must be 0 on entry (the harness zeroes it before every call, as the benchmark does).
extern "C" void dot_product(float* loss, const float* X, const float* Y, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    dot_product_kernel<<<blocks, threads>>>(loss, X, Y, N);
    cudaDeviceSynchronize();
}
