// matrix_transpose (BF16): a 64x64 tile goes through shared memory so that both the read of A
// and the write of B are coalesced, and every global access moves a pair of bf16 (4 bytes, so
// a warp reads or writes 128 contiguous bytes). Blocks of 32x8 threads; each thread moves 8 pairs.
// A row of the tile is 66 bf16 (33 words): the pair stores into it hit 32 different banks.
// Matrices whose sides are not multiples of 64 (or unaligned pointers) take a 32x32 tile of
// single elements with bounds checks instead.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#define TP_TILE 64
#define TP_PAD 2
#define TP_ROWS 8
#define TS_TILE 32

// Requires M % 64 == 0, N % 64 == 0 and 4-byte aligned A and B.
__global__ __launch_bounds__(32 * TP_ROWS) void matrix_transpose_bf16_pairs_kernel_optimized(
    const __nv_bfloat16* __restrict__ A, __nv_bfloat16* __restrict__ B, int M, int N) {
    __shared__ __align__(4) __nv_bfloat16 tile[TP_TILE][TP_TILE + TP_PAD];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const size_t row0 = (size_t)blockIdx.y * TP_TILE;  // first row of A in this tile
    const size_t col0 = (size_t)blockIdx.x * TP_TILE;  // first column of A in this tile
#pragma unroll
    for (int r = ty; r < TP_TILE; r += TP_ROWS) {
        const __nv_bfloat162 v = *reinterpret_cast<const __nv_bfloat162*>(A + (row0 + r) * N + col0 + 2 * tx);
        *reinterpret_cast<__nv_bfloat162*>(&tile[r][2 * tx]) = v;
    }
    __syncthreads();
    // Row c of B's tile holds column c of A's tile; each thread writes B[col0 + c][row0 + 2tx .. 2tx+1].
#pragma unroll
    for (int c = ty; c < TP_TILE; c += TP_ROWS) {
        __nv_bfloat162 v;
        v.x = tile[2 * tx][c];
        v.y = tile[2 * tx + 1][c];
        *reinterpret_cast<__nv_bfloat162*>(B + (col0 + c) * M + row0 + 2 * tx) = v;
    }
}

__global__ __launch_bounds__(TS_TILE * TP_ROWS) void matrix_transpose_bf16_tile_kernel_optimized(
    const __nv_bfloat16* __restrict__ A, __nv_bfloat16* __restrict__ B, int M, int N) {
    __shared__ __nv_bfloat16 tile[TS_TILE][TS_TILE + 1];
    int col = blockIdx.x * TS_TILE + threadIdx.x;  // column of A
    int row = blockIdx.y * TS_TILE + threadIdx.y;  // row of A
    for (int j = 0; j < TS_TILE; j += TP_ROWS) {
        if (col < N && row + j < M) tile[threadIdx.y + j][threadIdx.x] = A[(size_t)(row + j) * N + col];
    }
    __syncthreads();
    col = blockIdx.y * TS_TILE + threadIdx.x;  // column of B = row of A
    row = blockIdx.x * TS_TILE + threadIdx.y;  // row of B = column of A
    for (int j = 0; j < TS_TILE; j += TP_ROWS) {
        if (col < M && row + j < N) B[(size_t)(row + j) * M + col] = tile[threadIdx.x][threadIdx.y + j];
    }
}

extern "C" void matrix_transpose_bf16_optimized(const __nv_bfloat16* A, __nv_bfloat16* B, int M, int N) {
    if (M > 0 && N > 0) {
        const bool aligned = (((uintptr_t)A | (uintptr_t)B) % 4) == 0;
        if (aligned && M % TP_TILE == 0 && N % TP_TILE == 0) {
            dim3 block(32, TP_ROWS);
            dim3 grid(N / TP_TILE, M / TP_TILE);
            matrix_transpose_bf16_pairs_kernel_optimized<<<grid, block>>>(A, B, M, N);
        } else {
            dim3 block(TS_TILE, TP_ROWS);
            dim3 grid((N + TS_TILE - 1) / TS_TILE, (M + TS_TILE - 1) / TS_TILE);
            matrix_transpose_bf16_tile_kernel_optimized<<<grid, block>>>(A, B, M, N);
        }
    }
    cudaDeviceSynchronize();
}
