# A ModelNew for tasks/kernelbench-examples/scale_bias_leaky_relu: one fused pass instead of eager PyTorch's
# three element-wise kernels (multiply, add, LeakyReLU), for float32 and bfloat16 (math in float, one rounding).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <algorithm>

__device__ __forceinline__ float load_f(const float* p, long i) { return p[i]; }
__device__ __forceinline__ float load_f(const __nv_bfloat16* p, long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store_f(float* p, long i, float v) { p[i] = v; }
__device__ __forceinline__ void store_f(__nv_bfloat16* p, long i, float v) { p[i] = __float2bfloat16(v); }

template <typename T>
__global__ void fused_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y, long n,
                             int features, float scale, float slope) {
    const long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = load_f(x, i) * scale + load_f(bias, i % features);
        store_f(y, i, v > 0.0f ? v : v * slope);
    }
}

torch::Tensor scale_bias_leaky_relu(torch::Tensor x, torch::Tensor bias, double scale, double slope) {
    TORCH_CHECK(x.is_cuda() && bias.is_cuda(), "expected CUDA tensors");
    TORCH_CHECK(x.scalar_type() == bias.scalar_type(), "x and bias must share a dtype");
    auto xc = x.contiguous();
    auto bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    const long n = xc.numel();
    const int features = (int)bc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int blocks = (int)std::min<long>((n + threads - 1) / threads, 132L * 32);
    auto stream = c10::cuda::getCurrentCUDAStream();
    if (xc.scalar_type() == at::kBFloat16) {
        fused_kernel<__nv_bfloat16><<<blocks, threads, 0, stream>>>(
            reinterpret_cast<const __nv_bfloat16*>(xc.data_ptr<at::BFloat16>()),
            reinterpret_cast<const __nv_bfloat16*>(bc.data_ptr<at::BFloat16>()),
            reinterpret_cast<__nv_bfloat16*>(y.data_ptr<at::BFloat16>()), n, features, (float)scale, (float)slope);
    } else {
        TORCH_CHECK(xc.scalar_type() == at::kFloat, "expected float32 or bfloat16");
        fused_kernel<float><<<blocks, threads, 0, stream>>>(xc.data_ptr<float>(), bc.data_ptr<float>(),
                                                            y.data_ptr<float>(), n, features, (float)scale,
                                                            (float)slope);
    }
    return y;
}
"""

cpp_source = "torch::Tensor scale_bias_leaky_relu(torch::Tensor x, torch::Tensor bias, double scale, double slope);"

fused = load_inline(name="kw_scale_bias_leaky_relu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                    functions=["scale_bias_leaky_relu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float, negative_slope: float):
        super().__init__()
        self.scale = scale
        self.negative_slope = negative_slope
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fused.scale_bias_leaky_relu(x, self.bias, self.scale, self.negative_slope)
