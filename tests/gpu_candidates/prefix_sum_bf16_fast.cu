// prefix_sum (BF16): an O(N) scan instead of the original's O(N^2) independent sums. Sums are
// kept in float throughout and each output is rounded to bf16 exactly once, like the original:
// rounding a tile's local prefix to bf16 and then adding the tile's offset would round twice,
// and near zero that error is larger than the absolute tolerance.
//   1. each block sums its tile of 1024 elements (256 threads x 4) into tile_sums[tile];
//   2. one block turns the tile sums into exclusive offsets (chunks of 1024 with a running carry,
//      so any N works);
//   3. each block scans its tile again (a sequential scan in registers, then warp-shuffle scans of
//      the thread totals and of the 8 warp totals), adds the tile's offset and writes bf16.
// The tile sums live in a device buffer kept between calls (grown when N grows).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define SCAN_THREADS 256
#define SCAN_ITEMS 4
#define SCAN_TILE (SCAN_THREADS * SCAN_ITEMS)
#define SCAN_WARPS (SCAN_THREADS / 32)
#define OFFSETS_THREADS 1024
#define FULL_MASK 0xffffffffu

__global__ __launch_bounds__(SCAN_THREADS) void prefix_sum_bf16_reduce_kernel_optimized(
    const __nv_bfloat16* __restrict__ input, float* __restrict__ tile_sums, int N) {
    __shared__ float warp_totals[SCAN_WARPS];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const long long base = (long long)blockIdx.x * SCAN_TILE + (long long)threadIdx.x * SCAN_ITEMS;
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const long long i = base + j;
        if (i < N) s += __bfloat162float(input[i]);
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) s += __shfl_down_sync(FULL_MASK, s, off);
    if (lane == 0) warp_totals[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < SCAN_WARPS ? warp_totals[lane] : 0.0f;
#pragma unroll
        for (int off = 16; off > 0; off /= 2) s += __shfl_down_sync(FULL_MASK, s, off);
        if (lane == 0) tile_sums[blockIdx.x] = s;
    }
}

// In place: tile_sums[t] becomes the sum of all tiles before t.
__global__ __launch_bounds__(OFFSETS_THREADS) void prefix_sum_bf16_offsets_kernel_optimized(float* tile_sums,
                                                                                           int count) {
    __shared__ float warp_totals[OFFSETS_THREADS / 32];
    __shared__ float carry;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (threadIdx.x == 0) carry = 0.0f;
    __syncthreads();
    for (int start = 0; start < count; start += OFFSETS_THREADS) {
        const int i = start + threadIdx.x;
        float t = i < count ? tile_sums[i] : 0.0f;
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

// offsets == nullptr: a single tile, nothing before it.
__global__ __launch_bounds__(SCAN_THREADS) void prefix_sum_bf16_scan_kernel_optimized(
    __nv_bfloat16* __restrict__ output, const __nv_bfloat16* __restrict__ input, const float* __restrict__ offsets,
    int N) {
    __shared__ float warp_totals[SCAN_WARPS];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const long long base = (long long)blockIdx.x * SCAN_TILE + (long long)threadIdx.x * SCAN_ITEMS;

    float v[SCAN_ITEMS];
    float run = 0.0f;
#pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const long long i = base + j;
        run += i < N ? __bfloat162float(input[i]) : 0.0f;
        v[j] = run;  // inclusive scan of this thread's elements
    }

    float t = run;  // inclusive scan of the thread totals within the warp
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

    const float tile_offset = offsets != nullptr ? offsets[blockIdx.x] : 0.0f;
    const float offset = tile_offset + exclusive + (warp > 0 ? warp_totals[warp - 1] : 0.0f);
#pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const long long i = base + j;
        if (i < N) output[i] = __float2bfloat16(v[j] + offset);  // the only rounding to bf16
    }
}

static float* prefix_sum_bf16_tile_sums = nullptr;
static int prefix_sum_bf16_capacity = 0;

extern "C" void prefix_sum_bf16_optimized(__nv_bfloat16* output, const __nv_bfloat16* input, const int N) {
    if (N <= 0) {
        cudaDeviceSynchronize();
        return;
    }
    const int tiles = (N + SCAN_TILE - 1) / SCAN_TILE;
    const float* offsets = nullptr;
    if (tiles > 1) {
        if (tiles > prefix_sum_bf16_capacity) {
            cudaFree(prefix_sum_bf16_tile_sums);
            cudaMalloc(&prefix_sum_bf16_tile_sums, (size_t)tiles * sizeof(float));
            prefix_sum_bf16_capacity = tiles;
        }
        prefix_sum_bf16_reduce_kernel_optimized<<<tiles, SCAN_THREADS>>>(input, prefix_sum_bf16_tile_sums, N);
        prefix_sum_bf16_offsets_kernel_optimized<<<1, OFFSETS_THREADS>>>(prefix_sum_bf16_tile_sums, tiles);
        offsets = prefix_sum_bf16_tile_sums;
    }
    prefix_sum_bf16_scan_kernel_optimized<<<tiles, SCAN_THREADS>>>(output, input, offsets, N);
    cudaDeviceSynchronize();
}
