// Library reference for prefix_sum (FP32): CUB cub::DeviceScan::InclusiveSum (single-pass
// decoupled look-back scan), float accumulation. The baseline sums each prefix sequentially from
// the start; CUB adds in a blocked order (within a tile, then the running prefix of the tiles
// before it), so results differ by float rounding only (well inside the task's tolerance).
// CUB's temporary storage grows when needed and is kept between calls.
#include <cstdio>
#include <cstdlib>

#include <cub/device/device_scan.cuh>
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

Scratch g_temp;

}  // namespace

extern "C" void prefix_sum_optimized(float* output, const float* input, const int N) {
    if (N > 0) {
        size_t bytes = 0;
        REF_CUDA(cub::DeviceScan::InclusiveSum(nullptr, bytes, input, output, N));
        REF_CUDA(cub::DeviceScan::InclusiveSum(g_temp.reserve(bytes > 0 ? bytes : 1), bytes, input, output, N));
    }
    REF_CUDA(cudaDeviceSynchronize());
}
