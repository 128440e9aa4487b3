// Naive solution: a single block of 256 threads walks the whole vector (one SM does all the work).
#include "vector_add.h"

__global__ void vector_add_kernel(const float* A, const float* B, float* C, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) C[i] = A[i] + B[i];
}

void vector_add(const float* A, const float* B, float* C, int n) {
    vector_add_kernel<<<1, 256>>>(A, B, C, n);
}
