// MSKernelBench baseline: sorting (FP32), ascending, in place.
//
// Naive merge sort (as in the benchmark): bottom-up passes that merge sorted runs of
// width 1, 2, 4, ... between `data` and a scratch buffer; in each pass every thread places
// one element at (its rank in its own run) + (number of elements of the partner run that
// go before it, found by binary search). Equal values keep their order (left run first),
// so no two elements land on the same slot.
#include <cuda_runtime.h>

__global__ void sorting_merge_kernel(const float* in, float* out, int N, int width) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float value = in[i];
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
        if (left ? in[m] < value : in[m] <= value) {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    out[pair_start + (i - own_start) + (lo - first)] = value;
}

__global__ void sorting_copy_kernel(const float* in, float* out, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = in[i];
}

// Scratch buffer, kept between calls (grown when N grows) so that each call does not pay
// for cudaMalloc/cudaFree.
static float* sorting_scratch = nullptr;
static int sorting_capacity = 0;

extern "C" void sorting(float* data, int N) {
    if (N > sorting_capacity) {
        cudaFree(sorting_scratch);
        cudaMalloc(&sorting_scratch, (size_t)N * sizeof(float));
        sorting_capacity = N;
    }
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    float* src = data;
    float* dst = sorting_scratch;
    for (int width = 1; width < N; width *= 2) {
        sorting_merge_kernel<<<blocks, threads>>>(src, dst, N, width);
        float* t = src;
        src = dst;
        dst = t;
    }
    if (src != data) {
        sorting_copy_kernel<<<blocks, threads>>>(src, data, N);
    }
    cudaDeviceSynchronize();
}
