"""A stand-in `nvidia-smi` for hosts without an NVIDIA driver (this CI machine): it answers the two
queries KernelWeb makes (`--query-gpu=...` as CSV, `-L`) for a list of GPUs, or fails like nvidia-smi
does when the driver is unreachable. It replaces only the driver's report: the launcher, the Celery
workers, their pinning and the registry that read it are the real ones. Put its folder first on PATH."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCRIPT = '''#!{python}
import sys
GPUS = {gpus}
FAILURE = {failure}
if FAILURE:
    print(FAILURE)
    sys.exit(9)
args = sys.argv[1:]
if "-L" in args:
    for gpu in GPUS:
        print(f"GPU {{gpu['index']}}: {{gpu['name']}} (UUID: {{gpu['uuid']}})")
    sys.exit(0)
query = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
if query is None:
    print("fake nvidia-smi: only --query-gpu and -L are answered", file=sys.stderr)
    sys.exit(2)
for gpu in GPUS:
    print(", ".join(str(gpu[field]) for field in query.split(",")))
'''

DRIVER_DOWN = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
               "Make sure that the latest NVIDIA driver is installed and running.")


def gpu(index: int, name: str, *, driver: str = "550.54.15", cap: str = "9.0", memory_mib: int = 81559) -> dict:
    return {"index": index, "name": name, "uuid": f"GPU-{index:08x}-fake-4d3a-9b1e-{index:012x}",
            "memory.total": memory_mib, "driver_version": driver, "compute_cap": cap}


def install(folder: Path, gpus: list[dict], *, failure: str = "") -> Path:
    """Write `folder/nvidia-smi`; returns the folder (prepend it to PATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text(SCRIPT.format(python=sys.executable, gpus=json.dumps(gpus), failure=repr(failure)))
    script.chmod(0o755)
    return folder
