// MSKernelBench baseline: merge_attn_states (BF16), V_out = V_a p_a + V_b p_b with p = exp(lse - max) / (exp(lse_a - max) + exp(lse_b - max)) and LSE_out = log of that sum + max, as the benchmark's naive kernel: one block per (token, head) with head_size threads, thread 0 computing the two scales and the merged LSE into shared memory (in float, one rounding per output).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <float.h>

__global__ void merge_attn_states_bf16_kernel(__nv_bfloat16* V_out, __nv_bfloat16* LSE_out,
                                              const __nv_bfloat16* V_a, const __nv_bfloat16* lse_a,
                                              const __nv_bfloat16* V_b, const __nv_bfloat16* lse_b, int num_tokens,
                                              int num_heads, int head_size) {
    int token = blockIdx.x;
    int head = blockIdx.y;
    int e = threadIdx.x;
    if (token >= num_tokens || head >= num_heads || e >= head_size) return;
    __shared__ float scale_a, scale_b, merged_lse;
    if (e == 0) {
        float la = __bfloat162float(lse_a[head * num_tokens + token]);
        float lb = __bfloat162float(lse_b[head * num_tokens + token]);
        if (isinf(la)) la = -FLT_MAX;  // an empty partial state
        if (isinf(lb)) lb = -FLT_MAX;
        float m = fmaxf(la, lb);
        float wa = expf(la - m);
        float wb = expf(lb - m);
        float total = wa + wb;
        scale_a = wa / total;
        scale_b = wb / total;
        merged_lse = logf(total) + m;
    }
    __syncthreads();
    int offset = (token * num_heads + head) * head_size + e;
    V_out[offset] = __float2bfloat16(__bfloat162float(V_a[offset]) * scale_a + __bfloat162float(V_b[offset]) * scale_b);
    if (e == 0) LSE_out[head * num_tokens + token] = __float2bfloat16(merged_lse);
}

extern "C" void merge_attn_states_bf16(__nv_bfloat16* V_out, __nv_bfloat16* LSE_out, const __nv_bfloat16* V_a,
                                       const __nv_bfloat16* lse_a, const __nv_bfloat16* V_b,
                                       const __nv_bfloat16* lse_b, int num_tokens, int num_heads, int head_size) {
    dim3 grid(num_tokens, num_heads);
    merge_attn_states_bf16_kernel<<<grid, head_size>>>(V_out, LSE_out, V_a, lse_a, V_b, lse_b, num_tokens, num_heads,
                                                       head_size);
    cudaDeviceSynchronize();
}
