// Adversarial candidate (vector_add FP32): forwards to the baseline entry point.
// Expected: rejected by the static checks before any build (rule calls-baseline:
// "calls vector_add()"). Were it built, it would link (baseline.o is in the same
// executable) and pass with a speedup of about 1.
#include <cuda_runtime.h>

extern "C" void vector_add(const float* A, const float* B, float* C, int N);

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    vector_add(A, B, C, N);
}
