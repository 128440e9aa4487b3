// MSKernelBench baseline: top_k (BF16), the k largest values in descending order (ties by ascending index) with their indices, as the benchmark's naive kernels: (value, index) pairs in two scratch arrays allocated and freed in each call, a full merge sort in which each thread merges one pair of runs sequentially, two launches per run width (blocks of 256, a synchronize after every launch; values compared as float, exact for bf16), then the first k pairs copied out.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

struct TopKPairBf16 {
    __nv_bfloat16 value;
    int index;
};

// Sort order: the larger value first, equal values by the smaller index.
__device__ bool top_k_bf16_goes_first(const TopKPairBf16& a, const TopKPairBf16& b) {
    float va = __bfloat162float(a.value), vb = __bfloat162float(b.value);
    if (va != vb) return va > vb;
    return a.index < b.index;
}

__global__ void top_k_bf16_init_kernel(TopKPairBf16* pairs, const __nv_bfloat16* input, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        pairs[i].value = input[i];
        pairs[i].index = i;
    }
}

// Thread t merges the sorted runs src[start, mid) and src[mid, end) into dst[start, end), with
// start = 2 * t * width.
__global__ void top_k_bf16_merge_kernel(const TopKPairBf16* src, TopKPairBf16* dst, int N, int width) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int start = t * 2 * width;
    if (start >= N) return;
    int mid = min(start + width, N);
    int end = min(start + 2 * width, N);
    int i = start, j = mid, k = start;
    while (i < mid && j < end) {
        if (top_k_bf16_goes_first(src[j], src[i])) {
            dst[k++] = src[j++];
        } else {
            dst[k++] = src[i++];
        }
    }
    while (i < mid) dst[k++] = src[i++];  // also a last run without a partner (N not a power of two)
    while (j < end) dst[k++] = src[j++];
}

__global__ void top_k_bf16_extract_kernel(const TopKPairBf16* sorted, __nv_bfloat16* top_k_values, int* top_k_indices,
                                          int k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < k) {
        top_k_values[j] = sorted[j].value;
        top_k_indices[j] = sorted[j].index;
    }
}

extern "C" void top_k_bf16(__nv_bfloat16* top_k_values, int* top_k_indices, const __nv_bfloat16* input, const int N,
                           const int k) {
    TopKPairBf16* pairs = nullptr;
    TopKPairBf16* scratch = nullptr;
    cudaMalloc(&pairs, (size_t)N * sizeof(TopKPairBf16));
    cudaMalloc(&scratch, (size_t)N * sizeof(TopKPairBf16));
    int threads = 256;
    top_k_bf16_init_kernel<<<(N + threads - 1) / threads, threads>>>(pairs, input, N);
    cudaDeviceSynchronize();
    for (int width = 1; width < N; width *= 2) {
        int merges = (N + 2 * width - 1) / (2 * width);
        int blocks = (merges + threads - 1) / threads;
        top_k_bf16_merge_kernel<<<blocks, threads>>>(pairs, scratch, N, width);
        cudaDeviceSynchronize();
        top_k_bf16_merge_kernel<<<blocks, threads>>>(scratch, pairs, N, width);  // the same width again
        cudaDeviceSynchronize();
    }
    top_k_bf16_extract_kernel<<<(k + threads - 1) / threads, threads>>>(pairs, top_k_values, top_k_indices, k);
    cudaDeviceSynchronize();
    cudaFree(pairs);
    cudaFree(scratch);
    cudaDeviceSynchronize();
}
