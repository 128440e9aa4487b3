// MSKernelBench baseline: triangle_attention (FP32), per-dimension causal softmax attention as the benchmark's naive kernel: one thread per output element (b, h, i, d) in blocks of 256, three passes over the keys j <= i (maximum, sum of exponentials, weighted sum of values), the score q[b,h,i,d] * k[b,h,j,d] / sqrt(head_dim) recomputed in each.
#include <cuda_runtime.h>

#include <float.h>

__global__ void triangle_attention_kernel(const float* query, const float* key, const float* value,
                                          const float* attention_mask, float* output, int batch_size, int head_num,
                                          int seq_length, int head_dim) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch_size * head_num * seq_length * head_dim) return;
    int d = idx % head_dim;
    int i = (idx / head_dim) % seq_length;
    int bh = idx / (head_dim * seq_length);  // b * head_num + h
    int b = bh / head_num;
    int head_base = bh * seq_length * head_dim + d;  // element (b, h, 0, d)
    const float* mask_row = attention_mask + (b * seq_length + i) * seq_length;
    // The score of key j for this element; -FLT_MAX where the mask hides j.
    auto score_of = [&](int j) {
        float q = query[idx];
        float k = key[head_base + j * head_dim];
        float score = q * k / sqrtf((float)head_dim);
        return mask_row[j] > 0.5f ? -FLT_MAX : score;
    };

    float row_max = -FLT_MAX;
    for (int j = 0; j <= i; ++j) {
        float score = score_of(j);
        if (score > row_max) row_max = score;
    }
    float total = 0.0f;
    for (int j = 0; j <= i; ++j) {
        float score = score_of(j);
        total += score <= -FLT_MAX ? 0.0f : expf(score - row_max);
    }
    float acc = 0.0f;
    if (total > 0.0f) {
        for (int j = 0; j <= i; ++j) {
            float score = score_of(j);
            float weight = (score <= -FLT_MAX ? 0.0f : expf(score - row_max)) / total;
            acc += weight * value[head_base + j * head_dim];
        }
    }
    output[idx] = acc;
}

extern "C" void triangle_attention(const float* query, const float* key, const float* value,
                                   const float* attention_mask, float* output, int batch_size, int head_num,
                                   int seq_length, int head_dim) {
    int total = batch_size * head_num * seq_length * head_dim;
    int threads = 256;
    int blocks = (total + threads - 1) / threads;
    triangle_attention_kernel<<<blocks, threads>>>(query, key, value, attention_mask, output, batch_size, head_num,
                                                   seq_length, head_dim);
    cudaDeviceSynchronize();
}
