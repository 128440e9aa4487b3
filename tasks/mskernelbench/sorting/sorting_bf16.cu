// MSKernelBench baseline: sorting (BF16), ascending, in place. bf16 inputs can repeat;
// equal values are interchangeable.
//
// Naive merge sort (as in the benchmark): bottom-up passes that merge sorted runs of
// width 1, 2, 4, ... between `data` and a scratch buffer; in each pass every thread places
// one element at (its rank in its own run) + (number of elements of the partner run that
// go before it, found by binary search; values compared as float, exact for bf16). Equal
// values keep their order (left run first), so no two elements land on the same slot.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void sorting_bf16_merge_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int N, int width) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    __nv_bfloat16 element = in[i];
    float value = __bfloat162float(element);
    int pair_start = (i / (2 * width)) * (2 * width);
    int mid = min(pair_start + width, N);
    int end = min(pair_start + 2 * width, N);
    bool left = i < mid;
    int own_start = left ? pair_start : mid;
    int lo = left ? mid : pair_start;  // partner run [lo, hi)
    int hi = left ? end : mid;
    int first = lo;
    while (lo < hi) {  // left elements count partners < value, right elements partners <= value
        int m = (lo + hi) / 2;
        float partner = __bfloat162float(in[m]);
        if (left ? partner < value : partner <= value) {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    out[pair_start + (i - own_start) + (lo - first)] = element;
}

__global__ void sorting_bf16_copy_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = in[i];
}

// Scratch buffer, kept between calls (grown when N grows) so that each call does not pay
// for cudaMalloc/cudaFree.
static __nv_bfloat16* sorting_bf16_scratch = nullptr;
static int sorting_bf16_capacity = 0;

extern "C" void sorting_bf16(__nv_bfloat16* data, int N) {
    if (N > sorting_bf16_capacity) {
        cudaFree(sorting_bf16_scratch);
        cudaMalloc(&sorting_bf16_scratch, (size_t)N * sizeof(__nv_bfloat16));
        sorting_bf16_capacity = N;
    }
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    __nv_bfloat16* src = data;
    __nv_bfloat16* dst = sorting_bf16_scratch;
    for (int width = 1; width < N; width *= 2) {
        sorting_bf16_merge_kernel<<<blocks, threads>>>(src, dst, N, width);
        __nv_bfloat16* t = src;
        src = dst;
        dst = t;
    }
    if (src != data) {
        sorting_bf16_copy_kernel<<<blocks, threads>>>(src, data, N);
    }
    cudaDeviceSynchronize();
}
