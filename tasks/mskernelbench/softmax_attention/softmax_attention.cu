// MSKernelBench baseline: softmax_attention (FP32), Y = softmax(Q K^T / sqrt(dim_qk)) V, as the benchmark's naive kernels: two float scratch matrices (scores, probabilities) allocated and freed in each call, a 16 x 16-block kernel with one thread per score, a softmax with one thread per row (blocks of 256), a 16 x 16-block kernel with one thread per output.
#include <cuda_runtime.h>

#include <float.h>

// S[i, j] = (Q[i, :] . K[j, :]) * rsqrt(dim_qk), one thread per (i, j).
__global__ void softmax_attention_scores_kernel(int q_seq_len, int kv_seq_len, int dim_qk, const float* Q,
                                                const float* K, float* S) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= q_seq_len || j >= kv_seq_len) return;
    float dot = 0.0f;
    for (int d = 0; d < dim_qk; ++d) {
        dot += Q[i * dim_qk + d] * K[j * dim_qk + d];
    }
    S[i * kv_seq_len + j] = dot * rsqrtf((float)dim_qk);
}

// P[i, :] = softmax(S[i, :]), one thread per row: max, then exponentials and their sum, then scaling.
__global__ void softmax_attention_softmax_kernel(float* P, const float* S, int q_seq_len, int kv_seq_len) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= q_seq_len) return;
    const float* s = S + i * kv_seq_len;
    float* p = P + i * kv_seq_len;
    float row_max = -FLT_MAX;
    for (int j = 0; j < kv_seq_len; ++j) {
        if (s[j] > row_max) row_max = s[j];
    }
    float total = 0.0f;
    for (int j = 0; j < kv_seq_len; ++j) {
        p[j] = expf(s[j] - row_max);
        total += p[j];
    }
    for (int j = 0; j < kv_seq_len; ++j) {
        p[j] /= total;
    }
}

// Y[i, d] = P[i, :] . V[:, d], one thread per (i, d).
__global__ void softmax_attention_output_kernel(int q_seq_len, int kv_seq_len, int dim_v, const float* P,
                                                const float* V, float* Y) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= q_seq_len || d >= dim_v) return;
    float acc = 0.0f;
    for (int j = 0; j < kv_seq_len; ++j) {
        acc += P[i * kv_seq_len + j] * V[j * dim_v + d];
    }
    Y[i * dim_v + d] = acc;
}

extern "C" void softmax_attention(float* Y, const float* Q, const float* K, const float* V, int q_seq_len,
                                  int kv_seq_len, int dim_qk, int dim_v) {
    size_t bytes = (size_t)q_seq_len * kv_seq_len * sizeof(float);
    float* S = nullptr;
    float* P = nullptr;
    cudaMalloc(&S, bytes);
    cudaMalloc(&P, bytes);
    dim3 block(16, 16);
    dim3 grid_scores((kv_seq_len + 15) / 16, (q_seq_len + 15) / 16);
    softmax_attention_scores_kernel<<<grid_scores, block>>>(q_seq_len, kv_seq_len, dim_qk, Q, K, S);
    softmax_attention_softmax_kernel<<<(q_seq_len + 255) / 256, 256>>>(P, S, q_seq_len, kv_seq_len);
    dim3 grid_out((dim_v + 15) / 16, (q_seq_len + 15) / 16);
    softmax_attention_output_kernel<<<grid_out, block>>>(q_seq_len, kv_seq_len, dim_v, P, V, Y);
    cudaDeviceSynchronize();
    cudaFree(S);
    cudaFree(P);
}
