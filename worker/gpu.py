"""Which GPU (if any) this process can use, read from nvidia-smi."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass


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


def detect_gpu() -> GpuInfo | None:
    """The first visible GPU, or None when there is no driver or no device."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=index,name,uuid,compute_cap,memory.total,driver_version",
             "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 6 and fields[0].isdigit():
            return GpuInfo(int(fields[0]), fields[1], fields[2], fields[3], int(float(fields[4])), fields[5])
    return None
