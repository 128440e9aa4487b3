# A ModelNew for tasks/kernelbench-examples/matmul_square: a 32x32 shared-memory tiled float32 product with
# 2x2 outputs per thread. Correct, and well short of cuBLAS (the eager reference): the kind of first step an
# agent takes before tensor cores.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#define TILE 32

__global__ void matmul_tiled_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                    int N) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;  // 16 x 16 threads, 2 x 2 outputs each
    const int row0 = blockIdx.y * TILE + ty * 2, col0 = blockIdx.x * TILE + tx * 2;
    float acc[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
    for (int k0 = 0; k0 < N; k0 += TILE) {
        for (int i = ty; i < TILE; i += 16)
            for (int j = tx; j < TILE; j += 16) {
                const int ar = blockIdx.y * TILE + i, ac = k0 + j, br = k0 + i, bc = blockIdx.x * TILE + j;
                As[i][j] = (ar < N && ac < N) ? A[(long)ar * N + ac] : 0.f;
                Bs[i][j] = (br < N && bc < N) ? B[(long)br * N + bc] : 0.f;
            }
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            const float a0 = As[ty * 2][k], a1 = As[ty * 2 + 1][k];
            const float b0 = Bs[k][tx * 2], b1 = Bs[k][tx * 2 + 1];
            acc[0][0] += a0 * b0; acc[0][1] += a0 * b1;
            acc[1][0] += a1 * b0; acc[1][1] += a1 * b1;
        }
        __syncthreads();
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            if (row0 + i < N && col0 + j < N) C[(long)(row0 + i) * N + col0 + j] = acc[i][j];
}

torch::Tensor matmul_tiled(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.is_cuda() && B.is_cuda() && A.scalar_type() == at::kFloat && B.scalar_type() == at::kFloat,
                "expected float32 CUDA tensors");
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(0) == A.size(1) && B.sizes() == A.sizes(),
                "expected two square matrices of the same size");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int N = (int)a.size(0);
    auto C = torch::empty({N, N}, a.options());
    const dim3 threads(16, 16), blocks((N + TILE - 1) / TILE, (N + TILE - 1) / TILE);
    matmul_tiled_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(a.data_ptr<float>(),
                                                                                 b.data_ptr<float>(),
                                                                                 C.data_ptr<float>(), N);
    return C;
}
"""

cpp_source = "torch::Tensor matmul_tiled(torch::Tensor A, torch::Tensor B);"

tiled = load_inline(name="kw_matmul_square_tiled", cpp_sources=cpp_source, cuda_sources=cuda_source,
                    functions=["matmul_tiled"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return tiled.matmul_tiled(A, B)
