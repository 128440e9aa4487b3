// Library reference for top_k (BF16): CUB cub::DeviceRadixSort::SortPairsDescending of
// (value, index) pairs over the whole input with __nv_bfloat16 keys (16 key bits), then the first
// k pairs are copied out. BF16 inputs tie (each value twice at N = 65536): the tie rule matters.
// The indices 0..N-1 are the pair values (a static iota buffer, filled when N first grows);
// CUB's radix sort is stable, so equal values keep ascending index order: the baseline's
// contract (descending values, ties by ascending index). -0.0 and +0.0 compare equal in CUB as
// in the baseline's float comparisons. The sorted copies, the iota buffer and CUB's temporary
// storage grow when needed and are kept between calls; the input is only read.
#include <cstdio>
#include <cstdlib>

#include <cuda_bf16.h>
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#define REF_CUDA(call)                                                                                    \
    do {                                                                                                  \
        cudaError_t err_ = (call);                                                                        \
        if (err_ != cudaSuccess) {                                                                        \
            std::fprintf(stderr, "reference %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,            \
                         cudaGetErrorString(err_));                                                       \
            std::exit(3);                                                                                 \
        }                                                                                                 \
    } while (0)

using sort_key_t = __nv_bfloat16;

namespace {

// Device scratch that grows and is kept between calls.
struct Scratch {
    void* ptr = nullptr;
    size_t bytes = 0;
    void* reserve(size_t want) {
        if (want > bytes) {
            if (ptr != nullptr) REF_CUDA(cudaFree(ptr));
            REF_CUDA(cudaMalloc(&ptr, want));
            bytes = want;
        }
        return ptr;
    }
};

Scratch g_iota, g_keys, g_indices, g_temp;
int g_iota_count = 0;  // g_iota holds 0..g_iota_count-1

}  // namespace

__global__ void top_k_bf16_iota_kernel_optimized(int* indices, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) indices[i] = i;
}

__global__ void top_k_bf16_gather_kernel_optimized(const sort_key_t* keys, const int* indices, sort_key_t* top_k_values,
                                              int* top_k_indices, int k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < k) {
        top_k_values[j] = keys[j];
        top_k_indices[j] = indices[j];
    }
}

extern "C" void top_k_bf16_optimized(__nv_bfloat16* top_k_values, int* top_k_indices, const __nv_bfloat16* input,
                                     const int N, const int k) {
    const int count = k < N ? k : N;
    if (count > 0) {
        const int threads = 256;
        if (N > g_iota_count) {
            int* iota = static_cast<int*>(g_iota.reserve(size_t(N) * sizeof(int)));
            top_k_bf16_iota_kernel_optimized<<<(N + threads - 1) / threads, threads>>>(iota, N);
            REF_CUDA(cudaGetLastError());
            g_iota_count = N;
        }
        sort_key_t* keys = static_cast<sort_key_t*>(g_keys.reserve(size_t(N) * sizeof(sort_key_t)));
        int* indices = static_cast<int*>(g_indices.reserve(size_t(N) * sizeof(int)));
        const int* iota = static_cast<const int*>(g_iota.ptr);
        size_t bytes = 0;
        REF_CUDA(cub::DeviceRadixSort::SortPairsDescending(nullptr, bytes, input, keys, iota, indices, N));
        REF_CUDA(cub::DeviceRadixSort::SortPairsDescending(g_temp.reserve(bytes > 0 ? bytes : 1), bytes, input, keys,
                                                           iota, indices, N));
        top_k_bf16_gather_kernel_optimized<<<(count + threads - 1) / threads, threads>>>(keys, indices, top_k_values,
                                                                                    top_k_indices, count);
        REF_CUDA(cudaGetLastError());
    }
    REF_CUDA(cudaDeviceSynchronize());
}
