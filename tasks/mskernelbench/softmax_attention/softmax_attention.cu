// MSKernelBench baseline: softmax_attention (FP32), Y = softmax(Q K^T / sqrt(dim_qk)) V.
// Naive: three kernels through a float scratch matrix S(q_seq_len, kv_seq_len) allocated
// in each call: one thread per score (a dot product of length dim_qk), one thread per row
// for the softmax (max, exp and sum, normalize, in place), one thread per output element
// (a dot product of length kv_seq_len).
#include <cuda_runtime.h>
#include <math.h>

__global__ void softmax_attention_scores_kernel(float* S, const float* Q, const float* K, int q_seq_len,
                                                int kv_seq_len, int dim_qk, float scale) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < q_seq_len && j < kv_seq_len) {
        float acc = 0.0f;
        for (int k = 0; k < dim_qk; ++k) {
            acc += Q[(size_t)i * dim_qk + k] * K[(size_t)j * dim_qk + k];
        }
        S[(size_t)i * kv_seq_len + j] = acc * scale;
    }
}

__global__ void softmax_attention_softmax_kernel(float* S, int q_seq_len, int kv_seq_len) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < q_seq_len) {
        float* row = S + (size_t)i * kv_seq_len;
        float max_val = -INFINITY;
        for (int j = 0; j < kv_seq_len; ++j) {
            max_val = fmaxf(max_val, row[j]);
        }
        float sum = 0.0f;
        for (int j = 0; j < kv_seq_len; ++j) {
            row[j] = expf(row[j] - max_val);
            sum += row[j];
        }
        for (int j = 0; j < kv_seq_len; ++j) {
            row[j] = row[j] / sum;
        }
    }
}

__global__ void softmax_attention_output_kernel(float* Y, const float* P, const float* V, int q_seq_len,
                                                int kv_seq_len, int dim_v) {
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < q_seq_len && d < dim_v) {
        float acc = 0.0f;
        for (int j = 0; j < kv_seq_len; ++j) {
            acc += P[(size_t)i * kv_seq_len + j] * V[(size_t)j * dim_v + d];
        }
        Y[(size_t)i * dim_v + d] = acc;
    }
}

extern "C" void softmax_attention(float* Y, const float* Q, const float* K, const float* V, int q_seq_len,
                                  int kv_seq_len, int dim_qk, int dim_v) {
    float* S = nullptr;
    cudaMalloc(&S, (size_t)q_seq_len * kv_seq_len * sizeof(float));
    dim3 block(16, 16);
    dim3 grid_scores((kv_seq_len + 15) / 16, (q_seq_len + 15) / 16);
    softmax_attention_scores_kernel<<<grid_scores, block>>>(S, Q, K, q_seq_len, kv_seq_len, dim_qk,
                                                            1.0f / sqrtf((float)dim_qk));
    softmax_attention_softmax_kernel<<<(q_seq_len + 127) / 128, 128>>>(S, q_seq_len, kv_seq_len);
    dim3 grid_out((dim_v + 15) / 16, (q_seq_len + 15) / 16);
    softmax_attention_output_kernel<<<grid_out, block>>>(Y, S, V, q_seq_len, kv_seq_len, dim_v);
    cudaDeviceSynchronize();
    cudaFree(S);
}
