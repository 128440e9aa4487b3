// MSKernelBench baseline: merge_attn_states (BF16), computed in float. V is
// (tokens, heads, head_size), LSE is (heads, tokens). Naive: one thread per element of
// V_out; each computes the weights of its (head, token) itself, and the thread of element 0
// of the head vector also writes LSE_out; one rounding per output.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

__global__ void merge_attn_states_bf16_kernel(__nv_bfloat16* V_out, __nv_bfloat16* LSE_out,
                                              const __nv_bfloat16* V_a, const __nv_bfloat16* lse_a,
                                              const __nv_bfloat16* V_b, const __nv_bfloat16* lse_b, int num_tokens,
                                              int num_heads, int head_size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < num_tokens * num_heads * head_size) {
        int d = idx % head_size;
        int h = (idx / head_size) % num_heads;
        int t = idx / (head_size * num_heads);
        int k = h * num_tokens + t;
        float a = __bfloat162float(lse_a[k]);
        float b = __bfloat162float(lse_b[k]);
        float m = fmaxf(a, b);
        float wa = expf(a - m);
        float wb = expf(b - m);
        float total = wa + wb;
        float v = (__bfloat162float(V_a[idx]) * wa + __bfloat162float(V_b[idx]) * wb) / total;
        V_out[idx] = __float2bfloat16(v);
        if (d == 0) {
            LSE_out[k] = __float2bfloat16(logf(total) + m);
        }
    }
}

extern "C" void merge_attn_states_bf16(__nv_bfloat16* V_out, __nv_bfloat16* LSE_out, const __nv_bfloat16* V_a,
                                       const __nv_bfloat16* lse_a, const __nv_bfloat16* V_b,
                                       const __nv_bfloat16* lse_b, int num_tokens, int num_heads, int head_size) {
    int total = num_tokens * num_heads * head_size;
    int threads = 256;
    int blocks = (total + threads - 1) / threads;
    merge_attn_states_bf16_kernel<<<blocks, threads>>>(V_out, LSE_out, V_a, lse_a, V_b, lse_b, num_tokens,
                                                       num_heads, head_size);
    cudaDeviceSynchronize();
}
