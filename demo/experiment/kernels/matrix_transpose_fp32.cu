// Faster candidate for matrix_transpose (FP32): a 32x32 tile goes through shared memory
// so that both the read of A and the write of B are coalesced; the tile has 33 columns
// so that reading it by column does not hit one shared-memory bank 32 times.
// Blocks of 32x8 threads, each thread moving 4 elements.
#include <cuda_runtime.h>

#define TR_TILE 32
#define TR_ROWS 8

__global__ __launch_bounds__(TR_TILE* TR_ROWS) void matrix_transpose_kernel_optimized(const float* __restrict__ A,
                                                                                      float* __restrict__ B, int M,
                                                                                      int N) {
    __shared__ float tile[TR_TILE][TR_TILE + 1];
    int col = blockIdx.x * TR_TILE + threadIdx.x;  // column of A
    int row = blockIdx.y * TR_TILE + threadIdx.y;  // row of A
    for (int j = 0; j < TR_TILE; j += TR_ROWS) {
        if (col < N && row + j < M) tile[threadIdx.y + j][threadIdx.x] = A[(size_t)(row + j) * N + col];
    }
    __syncthreads();
    col = blockIdx.y * TR_TILE + threadIdx.x;  // column of B = row of A
    row = blockIdx.x * TR_TILE + threadIdx.y;  // row of B = column of A
    for (int j = 0; j < TR_TILE; j += TR_ROWS) {
        if (col < M && row + j < N) B[(size_t)(row + j) * M + col] = tile[threadIdx.x][threadIdx.y + j];
    }
}

extern "C" void matrix_transpose_optimized(const float* A, float* B, int M, int N) {
    dim3 block(TR_TILE, TR_ROWS);
    dim3 grid((N + TR_TILE - 1) / TR_TILE, (M + TR_TILE - 1) / TR_TILE);
    matrix_transpose_kernel_optimized<<<grid, block>>>(A, B, M, N);
    cudaDeviceSynchronize();
}
