// Adversarial candidate (vector_add FP32): launches on its own non-blocking stream and
// returns without synchronizing, hoping the timer stops before the kernel ends.
// Expected: correct, with an honest time (speedup about 1, not more): the harness calls
// cudaDeviceSynchronize() after every call, before reading outputs and before recording
// the stop event, so the kernel's work is inside the measured interval on any stream.
#include <cuda_runtime.h>

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}

static cudaStream_t side_stream = nullptr;

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    if (side_stream == nullptr) cudaStreamCreateWithFlags(&side_stream, cudaStreamNonBlocking);
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    vector_add_kernel_optimized<<<blocks, threads, 0, side_stream>>>(A, B, C, N);
    // no synchronization on purpose
}
