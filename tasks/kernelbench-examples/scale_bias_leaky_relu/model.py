import torch
import torch.nn as nn


class Model(nn.Module):
    """Scale, add a per-feature bias, then LeakyReLU: $y = \\mathrm{LeakyReLU}_{\\alpha}(s\\,x + b)$ over a
    batch of rows. Eager PyTorch runs three element-wise kernels and reads and writes the tensor three times;
    one fused kernel does it in a single pass."""

    def __init__(self, features: int, scale: float, negative_slope: float):
        super().__init__()
        self.scale = scale
        self.negative_slope = negative_slope
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x * self.scale + self.bias, self.negative_slope)


batch_size = 8192
features = 4096
scale = 0.5
negative_slope = 0.01


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, scale, negative_slope]
