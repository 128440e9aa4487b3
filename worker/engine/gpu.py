"""Which GPU (if any) this process can use, read from nvidia-smi.

`detect_gpu()` answers "which GPU?"; `probe()` also says why there is none,
for the `no_gpu` verdict and the CLI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    uuid: str
    compute_capability: str  # e.g. "9.0"
    memory_mib: int
    driver: str

    @property
    def arch(self) -> str:
        return "sm_" + self.compute_capability.replace(".", "")

    @property
    def smi_id(self) -> str | int:
        """How nvidia-smi's -i names this GPU: its UUID, else its index."""
        return self.uuid or self.index

    @property
    def lock_key(self) -> str:
        """A file-name-safe id for the per-GPU lock: the UUID, else the index."""
        return re.sub(r"[^\w.-]", "_", self.uuid or f"gpu{self.index}")


def detect_gpu() -> GpuInfo | None:
    """The first visible GPU, or None when there is no driver or no device."""
    return probe()[0]


def probe() -> tuple[GpuInfo | None, str]:
    """(the first GPU visible to this process, '') or (None, why not). CUDA_VISIBLE_DEVICES is honoured
    (by index or UUID prefix, matched against nvidia-smi's numbering)."""
    if os.environ.get("KW_NO_GPU"):
        return None, "KW_NO_GPU is set"
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, "nvidia-smi not found: no NVIDIA driver on this machine"
    # Old drivers do not know compute_cap; the second query leaves it out and asks CUDA instead.
    for query in (
        "index,name,uuid,memory.total,driver_version,compute_cap",
        "index,name,uuid,memory.total,driver_version",
    ):
        try:
            proc = subprocess.run(
                [smi, f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=20,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"nvidia-smi failed: {exc}"
        if proc.returncode == 0:
            break
    else:
        return None, f"nvidia-smi failed: {(proc.stderr or proc.stdout).strip()[:300]}"
    gpus: list[GpuInfo] = []
    caps: list[str] | None = None
    for line in proc.stdout.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) < 5 or not f[0].isdigit():
            continue
        if len(f) > 5 and re.fullmatch(r"\d+\.\d+", f[5]):
            cap = f[5]
        else:
            caps = caps if caps is not None else _device_query_caps()
            cap = caps[int(f[0])] if int(f[0]) < len(caps) else ""
        memory = int(float(f[3])) if re.fullmatch(r"[\d.]+", f[3]) else 0
        gpus.append(GpuInfo(int(f[0]), f[1], f[2], cap, memory, f[4]))
    if not gpus:
        return None, "nvidia-smi lists no GPU"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return gpus[0], ""
    first = visible.split(",")[0].strip()
    if first in ("", "-1", "none", "NoDevFiles"):
        return None, f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
    for gpu in gpus:
        if first == str(gpu.index) or (first.startswith(("GPU-", "MIG-")) and gpu.uuid.startswith(first)):
            return gpu, ""
    return None, f"CUDA_VISIBLE_DEVICES={visible!r} names no GPU that nvidia-smi lists"


def _device_query_caps() -> list[str]:
    """Compute capabilities from CUDA's own `__nvcc_device_query` (prints e.g. '90 90')."""
    tool = shutil.which("__nvcc_device_query")
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if tool is None and root and (Path(root) / "bin" / "__nvcc_device_query").is_file():
            tool = str(Path(root) / "bin" / "__nvcc_device_query")
    if tool is None:
        return []
    try:
        out = subprocess.run([tool], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [f"{c[:-1]}.{c[-1]}" for c in re.findall(r"\b(\d{2,3})\b", out)]
