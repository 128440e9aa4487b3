"""Find the CUDA tools and the GPU this worker runs on.

Nothing here raises when a tool or the GPU is missing: callers get `None`
and a reason they can show (the `no_gpu` verdict, a clear CLI message).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from worker.engine.gpu import GpuInfo, probe

DEFAULT_ARCH = "sm_90"  # what compile-only builds target when no GPU is present (KW_CUDA_ARCH overrides)


@dataclass(frozen=True)
class Toolchain:
    nvcc: str | None
    nvcc_version: str
    ncu: str | None
    ncu_version: str
    sanitizer: str | None
    gpu: GpuInfo | None
    gpu_reason: str  # why there is no GPU, when gpu is None
    arch: str  # the architecture builds target

    def describe(self) -> dict[str, str]:
        return {
            "nvcc": self.nvcc or "missing",
            "nvcc_version": self.nvcc_version,
            "ncu": self.ncu or "missing",
            "ncu_version": self.ncu_version,
            "compute_sanitizer": self.sanitizer or "missing",
            "gpu": self.gpu.name if self.gpu else f"none ({self.gpu_reason})",
            "arch": self.arch,
        }


def _cuda_roots() -> list[Path]:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    roots += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    return [Path(r) for r in roots if r]


def find_tool(name: str, extra: list[str] | None = None) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = [str(root / "bin" / name) for root in _cuda_roots()]
    candidates += [str(root / "compute-sanitizer" / name) for root in _cuda_roots()]
    candidates += extra or []
    for cand in candidates:
        for path in sorted(glob.glob(cand), reverse=True):
            if os.access(path, os.X_OK) and os.path.isfile(path):
                return path
    return None


def _version(argv: list[str], pattern: str) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(pattern, out)
    return m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else ""


@functools.cache
def detect() -> Toolchain:
    """Probe once per process; tests and long-lived workers may call `detect.cache_clear()`."""
    nvcc = find_tool("nvcc")
    ncu = find_tool("ncu", ["/opt/nvidia/nsight-compute/*/ncu", "/usr/local/NVIDIA-Nsight-Compute*/ncu"])
    sanitizer = find_tool("compute-sanitizer")
    gpu, reason = probe()
    arch = os.environ.get("KW_CUDA_ARCH") or (gpu.arch if gpu and gpu.compute_capability else DEFAULT_ARCH)
    return Toolchain(
        nvcc=nvcc,
        nvcc_version=_version([nvcc, "--version"], r"release [\d.]+, (V[\d.]+)") if nvcc else "",
        ncu=ncu,
        ncu_version=_version([ncu, "--version"], r"Version ([\d.]+)") if ncu else "",
        sanitizer=sanitizer,
        gpu=gpu,
        gpu_reason=reason,
        arch=arch,
    )
