// MSKernelBench baseline: triangle_attention (FP32): per (batch, head), causal softmax
// attention P V with P = softmax(Q K^T / sqrt(head_dim)) over the positions j <= i that the
// mask leaves visible (mask != 0 hides a position).
// Naive: three kernels through a float scratch buffer P(batch*head, seq, seq) allocated in
// each call: one thread per score (j <= i only), one thread per query row for the softmax
// (in place), one thread per output element (a sum over j <= i).
#include <cuda_runtime.h>
#include <math.h>

__global__ void triangle_attention_scores_kernel(float* P, const float* query, const float* key,
                                                 const float* attention_mask, int head_num, int seq_length,
                                                 int head_dim, float scale) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int bh = blockIdx.z;
    if (i < seq_length && j <= i) {
        int b = bh / head_num;
        size_t row = (size_t)bh * seq_length + i;
        float s = -INFINITY;
        if (attention_mask[((size_t)b * seq_length + i) * seq_length + j] == 0.0f) {
            float acc = 0.0f;
            for (int d = 0; d < head_dim; ++d) {
                acc += query[row * head_dim + d] * key[((size_t)bh * seq_length + j) * head_dim + d];
            }
            s = acc * scale;
        }
        P[row * seq_length + j] = s;
    }
}

__global__ void triangle_attention_softmax_kernel(float* P, int rows, int seq_length) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        int i = r % seq_length;
        float* p = P + (size_t)r * seq_length;
        float max_val = -INFINITY;
        for (int j = 0; j <= i; ++j) {
            max_val = fmaxf(max_val, p[j]);
        }
        float sum = 0.0f;
        for (int j = 0; j <= i; ++j) {
            p[j] = expf(p[j] - max_val);  // hidden positions: exp(-inf) = 0
            sum += p[j];
        }
        for (int j = 0; j <= i; ++j) {
            p[j] = p[j] / sum;
        }
    }
}

__global__ void triangle_attention_output_kernel(float* output, const float* P, const float* value, int rows,
                                                 int seq_length, int head_dim) {
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && d < head_dim) {
        int bh = r / seq_length;
        int i = r % seq_length;
        float acc = 0.0f;
        for (int j = 0; j <= i; ++j) {
            acc += P[(size_t)r * seq_length + j] * value[((size_t)bh * seq_length + j) * head_dim + d];
        }
        output[(size_t)r * head_dim + d] = acc;
    }
}

extern "C" void triangle_attention(const float* query, const float* key, const float* value,
                                   const float* attention_mask, float* output, int batch_size, int head_num,
                                   int seq_length, int head_dim) {
    int rows = batch_size * head_num * seq_length;
    float* P = nullptr;
    cudaMalloc(&P, (size_t)rows * seq_length * sizeof(float));
    dim3 block(16, 16);
    dim3 grid_scores((seq_length + 15) / 16, (seq_length + 15) / 16, batch_size * head_num);
    triangle_attention_scores_kernel<<<grid_scores, block>>>(P, query, key, attention_mask, head_num, seq_length,
                                                             head_dim, 1.0f / sqrtf((float)head_dim));
    triangle_attention_softmax_kernel<<<(rows + 127) / 128, 128>>>(P, rows, seq_length);
    dim3 grid_out((head_dim + 15) / 16, (rows + 15) / 16);
    triangle_attention_output_kernel<<<grid_out, block>>>(output, P, value, rows, seq_length, head_dim);
    cudaDeviceSynchronize();
    cudaFree(P);
}
