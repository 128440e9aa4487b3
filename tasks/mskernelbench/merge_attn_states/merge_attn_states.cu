// MSKernelBench baseline: merge_attn_states (FP32). V is (tokens, heads, head_size), LSE is
// (heads, tokens). Naive: one thread per element of V_out; each computes the weights of its
// (head, token) itself, and the thread of element 0 of the head vector also writes LSE_out.
#include <cuda_runtime.h>
#include <math.h>

__global__ void merge_attn_states_kernel(float* V_out, float* LSE_out, const float* V_a, const float* lse_a,
                                         const float* V_b, const float* lse_b, int num_tokens, int num_heads,
                                         int head_size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < num_tokens * num_heads * head_size) {
        int d = idx % head_size;
        int h = (idx / head_size) % num_heads;
        int t = idx / (head_size * num_heads);
        int k = h * num_tokens + t;
        float a = lse_a[k];
        float b = lse_b[k];
        float m = fmaxf(a, b);
        float wa = expf(a - m);
        float wb = expf(b - m);
        float total = wa + wb;
        V_out[idx] = (V_a[idx] * wa + V_b[idx] * wb) / total;
        if (d == 0) {
            LSE_out[k] = logf(total) + m;
        }
    }
}

extern "C" void merge_attn_states(float* V_out, float* LSE_out, const float* V_a, const float* lse_a,
                                  const float* V_b, const float* lse_b, int num_tokens, int num_heads,
                                  int head_size) {
    int total = num_tokens * num_heads * head_size;
    int threads = 256;
    int blocks = (total + threads - 1) / threads;
    merge_attn_states_kernel<<<blocks, threads>>>(V_out, LSE_out, V_a, lse_a, V_b, lse_b, num_tokens, num_heads,
                                                  head_size);
    cudaDeviceSynchronize();
}
