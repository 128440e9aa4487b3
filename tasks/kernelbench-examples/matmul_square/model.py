import torch
import torch.nn as nn


class Model(nn.Module):
    """Square matrix product $C = AB$ with $A, B \\in \\mathbb{R}^{N \\times N}$: a single operator, so a
    candidate computes it in its own kernel (PyTorch's matmul, i.e. cuBLAS, is the time to beat)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 2048


def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]


def get_init_inputs():
    return []
