// Adversarial candidate (vector_add FP32): right for the first 20 calls of its process (every
// correctness check: 5 sizes x 3 seeds), then it adds only the first half of the vectors, as a
// kernel that does less work once timing starts would.
// Expected: incorrect: the timing process warms up for 100 ms at N = 1024 (hundreds of calls), so its
// first timed call is already lazy, and the harness finds its output wrong (every timed call's output
// is compared with the baseline on the same fresh inputs, outside the timed region).
#include <cuda_runtime.h>

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}

static int calls = 0;

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    const int n = ++calls > 20 ? N / 2 : N;
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    if (blocks > 0) vector_add_kernel_optimized<<<blocks, threads>>>(A, B, C, n);
    cudaDeviceSynchronize();
}
