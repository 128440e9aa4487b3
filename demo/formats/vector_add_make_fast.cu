// A faster solution.cu for tasks/cudahercules-examples/vector_add_make: a full grid, four elements per thread
// with float4 loads and stores, a scalar tail for n % 4.
#include "vector_add.h"

__global__ void vector_add_vec4_kernel(const float4* __restrict__ A, const float4* __restrict__ B,
                                       float4* __restrict__ C, int quads) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < quads) {
        float4 a = A[i], b = B[i];
        C[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
}

__global__ void vector_add_tail_kernel(const float* A, const float* B, float* C, int from, int n) {
    int i = from + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}

void vector_add(const float* A, const float* B, float* C, int n) {
    int quads = n / 4;
    if (quads > 0)
        vector_add_vec4_kernel<<<(quads + 255) / 256, 256>>>(reinterpret_cast<const float4*>(A),
                                                             reinterpret_cast<const float4*>(B),
                                                             reinterpret_cast<float4*>(C), quads);
    if (n % 4) vector_add_tail_kernel<<<1, 32>>>(A, B, C, quads * 4, n);
}
