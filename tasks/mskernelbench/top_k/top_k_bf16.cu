// MSKernelBench baseline: top_k (BF16). The k largest values in descending order with
// their indices; equal values are ordered by ascending index (bf16 inputs can tie).
//
// Naive merge sort (as in the benchmark), on float copies of the values (exact for
// bf16): bottom-up passes that merge sorted runs of width 1, 2, 4, ...; in each pass
// every thread places one element at (its rank in its own run) + (number of elements
// of the partner run that come before it, found by binary search). The whole array is
// sorted, then the first k are copied out.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// Sort order: larger value first, equal values by smaller index (a strict total order).
__device__ bool top_k_bf16_before(float value_a, int index_a, float value_b, int index_b) {
    return value_a > value_b || (value_a == value_b && index_a < index_b);
}

__global__ void top_k_bf16_init_kernel(const __nv_bfloat16* input, float* keys, int* idx, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        keys[i] = __bfloat162float(input[i]);
        idx[i] = i;
    }
}

__global__ void top_k_bf16_merge_kernel(const float* keys_in, const int* idx_in, float* keys_out, int* idx_out,
                                        int N, int width) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float value = keys_in[i];
    int index = idx_in[i];
    int pair_start = (i / (2 * width)) * (2 * width);
    int mid = min(pair_start + width, N);
    int end = min(pair_start + 2 * width, N);
    int own_start = i < mid ? pair_start : mid;
    int lo = i < mid ? mid : pair_start;   // partner run [lo, hi)
    int hi = i < mid ? end : mid;
    int first = lo;
    while (lo < hi) {                      // count partner elements that come before this one
        int m = (lo + hi) / 2;
        if (top_k_bf16_before(keys_in[m], idx_in[m], value, index)) {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    int out = pair_start + (i - own_start) + (lo - first);
    keys_out[out] = value;
    idx_out[out] = index;
}

__global__ void top_k_bf16_gather_kernel(const float* keys, const int* idx, __nv_bfloat16* top_k_values,
                                         int* top_k_indices, int k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < k) {
        top_k_values[j] = __float2bfloat16(keys[j]);
        top_k_indices[j] = idx[j];
    }
}

// Sort scratch, kept between calls (grown when N grows) so that each call does not
// pay for cudaMalloc/cudaFree.
static float* top_k_bf16_keys[2] = {nullptr, nullptr};
static int* top_k_bf16_idx[2] = {nullptr, nullptr};
static int top_k_bf16_capacity = 0;

static void top_k_bf16_reserve(int N) {
    if (N <= top_k_bf16_capacity) return;
    for (int b = 0; b < 2; ++b) {
        cudaFree(top_k_bf16_keys[b]);
        cudaFree(top_k_bf16_idx[b]);
        cudaMalloc(&top_k_bf16_keys[b], (size_t)N * sizeof(float));
        cudaMalloc(&top_k_bf16_idx[b], (size_t)N * sizeof(int));
    }
    top_k_bf16_capacity = N;
}

extern "C" void top_k_bf16(__nv_bfloat16* top_k_values, int* top_k_indices, const __nv_bfloat16* input, const int N,
                           const int k) {
    top_k_bf16_reserve(N);
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    int cur = 0;
    top_k_bf16_init_kernel<<<blocks, threads>>>(input, top_k_bf16_keys[cur], top_k_bf16_idx[cur], N);
    for (int width = 1; width < N; width *= 2) {
        top_k_bf16_merge_kernel<<<blocks, threads>>>(top_k_bf16_keys[cur], top_k_bf16_idx[cur],
                                                     top_k_bf16_keys[1 - cur], top_k_bf16_idx[1 - cur], N, width);
        cur = 1 - cur;
    }
    int count = k < N ? k : N;
    top_k_bf16_gather_kernel<<<(count + threads - 1) / threads, threads>>>(top_k_bf16_keys[cur], top_k_bf16_idx[cur],
                                                                          top_k_values, top_k_indices, count);
    cudaDeviceSynchronize();
}
