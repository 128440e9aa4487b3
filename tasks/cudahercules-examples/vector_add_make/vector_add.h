// The interface the harness calls: C[i] = A[i] + B[i], launched on the default stream.
#pragma once
void vector_add(const float* A, const float* B, float* C, int n);
