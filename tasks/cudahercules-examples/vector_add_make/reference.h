// The expert implementation (reference.cu); the harness's, never the solution's.
#pragma once
void reference_vector_add(const float* A, const float* B, float* C, int n);
