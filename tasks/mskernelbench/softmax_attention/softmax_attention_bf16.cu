// MSKernelBench baseline: softmax_attention (BF16), Y = softmax(Q K^T / sqrt(dim_qk)) V, as the benchmark's naive kernels: two bf16 scratch matrices allocated and freed in each call, one thread per score (16 x 16 blocks, float dot product, score rounded to bf16), one thread per row for the softmax (blocks of 256; the exponentials are stored as bf16, summed in float, then scaled and rounded again), one thread per output (float sum of bf16 products, one rounding).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <float.h>

__global__ void softmax_attention_bf16_scores_kernel(int q_seq_len, int kv_seq_len, int dim_qk,
                                                     const __nv_bfloat16* Q, const __nv_bfloat16* K,
                                                     __nv_bfloat16* S) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= q_seq_len || j >= kv_seq_len) return;
    float dot = 0.0f;
    for (int d = 0; d < dim_qk; ++d) {
        dot += __bfloat162float(Q[i * dim_qk + d]) * __bfloat162float(K[j * dim_qk + d]);
    }
    S[i * kv_seq_len + j] = __float2bfloat16(dot * rsqrtf((float)dim_qk));
}

__global__ void softmax_attention_bf16_softmax_kernel(__nv_bfloat16* P, const __nv_bfloat16* S, int q_seq_len,
                                                      int kv_seq_len) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= q_seq_len) return;
    const __nv_bfloat16* s = S + i * kv_seq_len;
    __nv_bfloat16* p = P + i * kv_seq_len;
    float row_max = -FLT_MAX;
    for (int j = 0; j < kv_seq_len; ++j) {
        float v = __bfloat162float(s[j]);
        if (v > row_max) row_max = v;
    }
    float total = 0.0f;
    for (int j = 0; j < kv_seq_len; ++j) {
        float e = expf(__bfloat162float(s[j]) - row_max);
        p[j] = __float2bfloat16(e);  // stored rounded, summed unrounded
        total += e;
    }
    float inv_total = 1.0f / total;
    for (int j = 0; j < kv_seq_len; ++j) {
        p[j] = __float2bfloat16(__bfloat162float(p[j]) * inv_total);
    }
}

__global__ void softmax_attention_bf16_output_kernel(int q_seq_len, int kv_seq_len, int dim_v,
                                                     const __nv_bfloat16* P, const __nv_bfloat16* V,
                                                     __nv_bfloat16* Y) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= q_seq_len || d >= dim_v) return;
    float acc = 0.0f;
    for (int j = 0; j < kv_seq_len; ++j) {
        acc += __bfloat162float(P[i * kv_seq_len + j]) * __bfloat162float(V[j * dim_v + d]);
    }
    Y[i * dim_v + d] = __float2bfloat16(acc);
}

extern "C" void softmax_attention_bf16(__nv_bfloat16* Y, const __nv_bfloat16* Q, const __nv_bfloat16* K,
                                       const __nv_bfloat16* V, int q_seq_len, int kv_seq_len, int dim_qk,
                                       int dim_v) {
    size_t bytes = (size_t)q_seq_len * kv_seq_len * sizeof(__nv_bfloat16);
    __nv_bfloat16* S = nullptr;
    __nv_bfloat16* P = nullptr;
    cudaMalloc(&S, bytes);
    cudaMalloc(&P, bytes);
    dim3 block(16, 16);
    dim3 grid_scores((kv_seq_len + 15) / 16, (q_seq_len + 15) / 16);
    softmax_attention_bf16_scores_kernel<<<grid_scores, block>>>(q_seq_len, kv_seq_len, dim_qk, Q, K, S);
    softmax_attention_bf16_softmax_kernel<<<(q_seq_len + 255) / 256, 256>>>(P, S, q_seq_len, kv_seq_len);
    dim3 grid_out((dim_v + 15) / 16, (q_seq_len + 15) / 16);
    softmax_attention_bf16_output_kernel<<<grid_out, block>>>(q_seq_len, kv_seq_len, dim_v, P, V, Y);
    cudaDeviceSynchronize();
    cudaFree(S);
    cudaFree(P);
}
