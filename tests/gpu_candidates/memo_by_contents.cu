// Adversarial candidate (dot_product FP32): remembers its last result with a key made of N, the
// input addresses and the first four values of X and Y, all on the device. A probe kernel compares
// the key; on a hit it writes the remembered loss and the reduction returns at once, so a timer
// that reuses one input per size would see a call of two trivial kernels. The correctness seeds
// change the contents, so they always miss.
// Expected: correct, with an honest time: every timed call gets fresh inputs, so the key never
// matches and every call does the whole reduction (P about 1, as the baseline-like miss path).
#include <cuda_runtime.h>

__device__ float memo_key_optimized[9];
__device__ float memo_loss_optimized;
__device__ int memo_valid_optimized;
__device__ int memo_hit_optimized;

__global__ void memo_probe_kernel_optimized(float* loss, const float* X, const float* Y, int N) {
    int hit = memo_valid_optimized && memo_key_optimized[8] == (float)N;
    for (int k = 0; k < 4 && k < N; ++k) {
        hit = hit && memo_key_optimized[k] == X[k] && memo_key_optimized[4 + k] == Y[k];
    }
    memo_hit_optimized = hit;
    if (hit) loss[0] = memo_loss_optimized;
}

__global__ void dot_kernel_optimized(float* loss, const float* X, const float* Y, int N) {
    if (memo_hit_optimized) return;
    float partial = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) partial += X[i] * Y[i];
    if (partial != 0.0f) atomicAdd(loss, partial);
}

__global__ void memo_store_kernel_optimized(const float* loss, const float* X, const float* Y, int N) {
    if (memo_hit_optimized) return;
    for (int k = 0; k < 4 && k < N; ++k) {
        memo_key_optimized[k] = X[k];
        memo_key_optimized[4 + k] = Y[k];
    }
    memo_key_optimized[8] = (float)N;
    memo_loss_optimized = loss[0];
    memo_valid_optimized = 1;
}

extern "C" void dot_product_optimized(float* loss, const float* X, const float* Y, const int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    memo_probe_kernel_optimized<<<1, 1>>>(loss, X, Y, N);
    dot_kernel_optimized<<<blocks, threads>>>(loss, X, Y, N);
    memo_store_kernel_optimized<<<1, 1>>>(loss, X, Y, N);
    cudaDeviceSynchronize();
}
