// Library reference for sorting (BF16): CUB cub::DeviceRadixSort::SortKeys on __nv_bfloat16 keys
// (CUB's NumericTraits<__nv_bfloat16> order the 16-bit patterns numerically, -0.0 equal to +0.0;
// 16 key bits, so fewer passes than FP32), ascending, in place. The keys are sorted through a
// cub::DoubleBuffer (data and a static alternate buffer of N keys); when CUB leaves the result
// in the alternate buffer, it is copied back into `data`. The alternate buffer and CUB's
// temporary storage grow when needed and are kept between calls.
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

Scratch g_alternate, g_temp;

}  // namespace

extern "C" void sorting_bf16_optimized(__nv_bfloat16* data, int N) {
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
