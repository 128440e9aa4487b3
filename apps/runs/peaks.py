"""Peak DRAM bandwidth and arithmetic throughput per GPU model, for the roofline and the "% of peak" columns.

Values are the vendor's published numbers (boost clock, dense: the "with sparsity" tensor figures halved),
each row naming the NVIDIA document it comes from. A figure a document does not list stays None and the
viewer shows no percentage for it. `for_gpu()` matches the name CUDA reports (`nvidia-smi`, ncu's `gpu`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Peaks:
    model: str
    memory: str  # memory technology, for the roof's label
    bandwidth_gbs: float  # DRAM bandwidth, GB/s (10^9 bytes per second)
    fp32_tflops: float  # FP32 on CUDA cores (non-tensor)
    bf16_tflops: float | None  # BF16 on CUDA cores (non-tensor), where the document lists it
    bf16_tensor_tflops: float | None  # BF16 on tensor cores, dense, FP32 accumulate
    source: str

    @property
    def bandwidth(self) -> float:
        """bytes per second"""
        return self.bandwidth_gbs * 1e9

    def compute(self, precision: str) -> float:
        """The FLOP/s ceiling a kernel of this precision is measured against (FLOP per second): FP32 on CUDA
        cores for fp32 tasks, BF16 tensor cores for bf16 tasks (their highest BF16 ceiling)."""
        if precision == "bf16" and self.bf16_tensor_tflops:
            return self.bf16_tensor_tflops * 1e12
        return self.fp32_tflops * 1e12

    def compute_label(self, precision: str) -> str:
        return "BF16 tensor" if precision == "bf16" and self.bf16_tensor_tflops else "FP32"


# Order matters: the first pattern that matches the reported name wins (H100 PCIe before the bare H100).
TABLE: tuple[tuple[str, Peaks], ...] = (
    # NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column): 4.8 TB/s HBM3e, FP32 67 TFLOPS,
    # BF16 Tensor Core 1,979 TFLOPS with sparsity.
    (r"\bH200\b", Peaks("H200 SXM", "HBM3e", 4800, 67.0, None, 989.5,
                        "NVIDIA H200 Tensor Core GPU datasheet")),
    # NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe column): 2 TB/s HBM2e, FP32 51 TFLOPS, BF16 Tensor Core
    # 1,513 TFLOPS with sparsity; NVIDIA H100 Tensor Core GPU Architecture whitepaper: BF16 non-tensor 102.4.
    (r"\bH100\b.*PCIe", Peaks("H100 PCIe", "HBM2e", 2000, 51.0, 102.4, 756.5,
                              "NVIDIA H100 Tensor Core GPU datasheet; H100 architecture whitepaper")),
    # Same datasheet (H100 NVL column): 3.9 TB/s HBM3, FP32 60 TFLOPS, BF16 Tensor Core 1,671 TFLOPS w/ sparsity.
    (r"\bH100 NVL\b", Peaks("H100 NVL", "HBM3", 3900, 60.0, None, 835.5,
                            "NVIDIA H100 Tensor Core GPU datasheet")),
    # Same datasheet (H100 SXM column): 3.35 TB/s HBM3, FP32 67 TFLOPS, BF16 Tensor Core 1,979 TFLOPS with
    # sparsity; the architecture whitepaper lists BF16 non-tensor 133.8 TFLOPS (SXM5).
    (r"\bH100\b", Peaks("H100 SXM", "HBM3", 3350, 67.0, 133.8, 989.5,
                        "NVIDIA H100 Tensor Core GPU datasheet; H100 architecture whitepaper")),
    # NVIDIA A100 Tensor Core GPU datasheet: A100 80GB SXM 2,039 GB/s HBM2e (80GB PCIe 1,935 GB/s,
    # 40GB 1,555 GB/s), FP32 19.5 TFLOPS, BF16 Tensor Core 312 TFLOPS (dense); the NVIDIA A100 Tensor Core GPU
    # Architecture whitepaper lists BF16 non-tensor 39 TFLOPS.
    (r"\bA100\b.*PCIE.*40|\bA100\b.*40GB.*PCIe", Peaks("A100 40GB PCIe", "HBM2", 1555, 19.5, 39.0, 312.0,
                                                       "NVIDIA A100 Tensor Core GPU datasheet")),
    (r"\bA100\b.*PCIe", Peaks("A100 80GB PCIe", "HBM2e", 1935, 19.5, 39.0, 312.0,
                              "NVIDIA A100 Tensor Core GPU datasheet")),
    (r"\bA100\b.*40GB", Peaks("A100 40GB SXM", "HBM2", 1555, 19.5, 39.0, 312.0,
                              "NVIDIA A100 Tensor Core GPU datasheet")),
    (r"\bA100\b", Peaks("A100 80GB SXM", "HBM2e", 2039, 19.5, 39.0, 312.0, "NVIDIA A100 Tensor Core GPU datasheet")),
    # NVIDIA L40S GPU datasheet: 864 GB/s GDDR6, FP32 91.6 TFLOPS, BF16 Tensor Core 362.05 TFLOPS (733 w/ sparsity).
    (r"\bL40S\b", Peaks("L40S", "GDDR6", 864, 91.6, None, 362.05, "NVIDIA L40S GPU datasheet")),
    # NVIDIA Ada GPU Architecture whitepaper (GeForce RTX 4090 column): 1,008 GB/s GDDR6X, FP32 82.6 TFLOPS,
    # BF16 Tensor with FP32 accumulate 165.2 TFLOPS (dense).
    (r"\bRTX 4090\b", Peaks("GeForce RTX 4090", "GDDR6X", 1008, 82.6, None, 165.2,
                            "NVIDIA Ada GPU Architecture whitepaper")),
)


def for_gpu(name: str | None) -> Peaks | None:
    """The peaks of the GPU CUDA reports as `name` (e.g. "NVIDIA H100 80GB HBM3"), or None if unknown."""
    for pattern, peaks in TABLE:
        if name and re.search(pattern, name, re.I):
            return peaks
    return None
