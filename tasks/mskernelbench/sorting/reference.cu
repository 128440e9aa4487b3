// Library reference for sorting (FP32): CUB cub::DeviceRadixSort::SortKeys, ascending, in place.
// The keys are sorted through a cub::DoubleBuffer (data and a static alternate buffer of N
// floats); when CUB leaves the result in the alternate buffer (an odd number of passes, e.g. the
// single-tile path for small N), it is copied back into `data`. CUB's float radix order is the
// numeric order, with -0.0 and +0.0 treated as equal (stable), NaN not expected. The alternate
// buffer and CUB's temporary storage grow when needed and are kept between calls.
#include <cstdio>
#include <cstdlib>

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

using sort_key_t = float;

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

Scratch g_alternate, g_temp;

}  // namespace

extern "C" void sorting_optimized(float* data, int N) {
    if (N > 1) {
        sort_key_t* alternate = static_cast<sort_key_t*>(g_alternate.reserve(size_t(N) * sizeof(sort_key_t)));
        cub::DoubleBuffer<sort_key_t> keys(data, alternate);
        size_t bytes = 0;
        REF_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys, N));
        REF_CUDA(cub::DeviceRadixSort::SortKeys(g_temp.reserve(bytes > 0 ? bytes : 1), bytes, keys, N));
        if (keys.Current() != data) {
            REF_CUDA(cudaMemcpyAsync(data, keys.Current(), size_t(N) * sizeof(sort_key_t), cudaMemcpyDeviceToDevice, 0));
        }
    }
    REF_CUDA(cudaDeviceSynchronize());
}
