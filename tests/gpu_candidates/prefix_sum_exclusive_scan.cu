// Faster candidate for prefix_sum (FP32): an O(N) three-phase scan instead of the
// baseline's O(N^2) independent sums.
//   1. each block scans a tile of 1024 elements (256 threads x 4 consecutive elements:
//      a sequential scan in registers, then warp-shuffle scans of the thread totals and
//      of the 8 warp totals) and writes the tile total;
//   2. one block turns the tile totals into exclusive offsets (chunks of 1024 with a
//      running carry, so any N works);
//   3. every element of tile t > 0 adds offset t.
// The tile totals live in a device buffer kept between calls (grown when N grows).
#include <cuda_runtime.h>

#define SCAN_THREADS 256
#define SCAN_ITEMS 4
#define SCAN_TILE (SCAN_THREADS * SCAN_ITEMS)
#define SCAN_WARPS (SCAN_THREADS / 32)
#define OFFSETS_THREADS 1024
#define FULL_MASK 0xffffffffu

__global__ __launch_bounds__(SCAN_THREADS) void prefix_sum_tile_kernel_optimized(float* output, const float* input,
                                                                                 float* tile_sums, int N) {
    __shared__ float warp_totals[SCAN_WARPS];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const long long base = (long long)blockIdx.x * SCAN_TILE + (long long)threadIdx.x * SCAN_ITEMS;

    float v[SCAN_ITEMS];
    float run = 0.0f;
#pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const long long i = base + j;
        v[j] = run;  // running sum of this thread's elements
        run += i < N ? input[i] : 0.0f;
    }

    // inclusive scan of the thread totals within the warp
    float t = run;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
        const float o = __shfl_up_sync(FULL_MASK, t, off);
        if (lane >= off) t += o;
    }
    float exclusive = __shfl_up_sync(FULL_MASK, t, 1);  // sum of the lanes before this one
    if (lane == 0) exclusive = 0.0f;
    if (lane == 31) warp_totals[warp] = t;
    __syncthreads();

    if (warp == 0) {  // inclusive scan of the warp totals
        float w = lane < SCAN_WARPS ? warp_totals[lane] : 0.0f;
#pragma unroll
        for (int off = 1; off < 32; off *= 2) {
            const float o = __shfl_up_sync(FULL_MASK, w, off);
            if (lane >= off) w += o;
        }
        if (lane < SCAN_WARPS) warp_totals[lane] = w;
    }
    __syncthreads();

    const float offset = exclusive + (warp > 0 ? warp_totals[warp - 1] : 0.0f);
#pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const long long i = base + j;
        if (i < N) output[i] = v[j] + offset;
    }
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = warp_totals[SCAN_WARPS - 1];
}

// In place: tile_sums[t] becomes the sum of all tiles before t.
__global__ __launch_bounds__(OFFSETS_THREADS) void prefix_sum_offsets_kernel_optimized(float* tile_sums, int count) {
    __shared__ float warp_totals[OFFSETS_THREADS / 32];
    __shared__ float carry;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (threadIdx.x == 0) carry = 0.0f;
    __syncthreads();
    for (int start = 0; start < count; start += OFFSETS_THREADS) {
        const int i = start + threadIdx.x;
        const float x = i < count ? tile_sums[i] : 0.0f;
        float t = x;
#pragma unroll
        for (int off = 1; off < 32; off *= 2) {
            const float o = __shfl_up_sync(FULL_MASK, t, off);
            if (lane >= off) t += o;
        }
        float exclusive = __shfl_up_sync(FULL_MASK, t, 1);
        if (lane == 0) exclusive = 0.0f;
        if (lane == 31) warp_totals[warp] = t;
        __syncthreads();
        if (warp == 0) {
            float w = warp_totals[lane];  // OFFSETS_THREADS / 32 == 32 warps
#pragma unroll
            for (int off = 1; off < 32; off *= 2) {
                const float o = __shfl_up_sync(FULL_MASK, w, off);
                if (lane >= off) w += o;
            }
            warp_totals[lane] = w;
        }
        __syncthreads();
        const float before = carry + exclusive + (warp > 0 ? warp_totals[warp - 1] : 0.0f);
        if (i < count) tile_sums[i] = before;
        __syncthreads();  // everyone has read `carry` and `warp_totals`
        if (threadIdx.x == 0) carry += warp_totals[OFFSETS_THREADS / 32 - 1];
        __syncthreads();
    }
}

__global__ void prefix_sum_add_kernel_optimized(float* output, const float* offsets, int N) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x + SCAN_TILE;  // tile 0 needs nothing
    if (i < N) output[i] += offsets[i / SCAN_TILE];
}

static float* prefix_sum_tile_sums = nullptr;
static int prefix_sum_capacity = 0;

extern "C" void prefix_sum_optimized(float* output, const float* input, const int N) {
    if (N <= 0) {
        cudaDeviceSynchronize();
        return;
    }
    const int tiles = (N + SCAN_TILE - 1) / SCAN_TILE;
    if (tiles > prefix_sum_capacity) {
        cudaFree(prefix_sum_tile_sums);
        cudaMalloc(&prefix_sum_tile_sums, (size_t)tiles * sizeof(float));
        prefix_sum_capacity = tiles;
    }
    prefix_sum_tile_kernel_optimized<<<tiles, SCAN_THREADS>>>(output, input, prefix_sum_tile_sums, N);
    if (tiles > 1) {
        prefix_sum_offsets_kernel_optimized<<<1, OFFSETS_THREADS>>>(prefix_sum_tile_sums, tiles);
        const int rest = N - SCAN_TILE;
        prefix_sum_add_kernel_optimized<<<(rest + 255) / 256, 256>>>(output, prefix_sum_tile_sums, N);
    }
    cudaDeviceSynchronize();
}
