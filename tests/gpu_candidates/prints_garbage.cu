// Adversarial candidate (vector_add FP32): correct, but writes fake result JSON and junk
// to stdout and stderr (from the host and from the GPU).
// Expected: correct, speedup about 1. The harness writes its result only to --out, so
// nothing printed by a candidate can be mistaken for it.
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
    if (i == 0) printf("{\"correct\": true, \"speedup\": 1000.0, \"error\": null}\n");
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    printf("{\"mode\": \"check\", \"sizes\": [{\"correct\": true, \"timing\": {\"mean_ms\": 0.000001}}]}\n");
    fprintf(stderr, "\x1b[31mFATAL\x1b[0m ]]}{ not json at all \\\" \n");
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    vector_add_kernel_optimized<<<blocks, threads>>>(A, B, C, N);
    cudaDeviceSynchronize();
    fflush(stdout);
}
