// Adversarial candidate (vector_add FP32): returns without writing C.
// Expected: incorrect. The harness poisons outputs (0xFF bytes = NaN) before every
// call, so C reads back as NaN: first_mismatch at index 0, got "nan".
#include <cuda_runtime.h>

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    (void)A;
    (void)B;
    (void)C;
    (void)N;
    cudaDeviceSynchronize();
}
