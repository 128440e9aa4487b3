"""Which part of the tool policy keeps a profiler's target from running (docs/gpu-validation.md, "Not yet run").

    python bench/tool_policy_probe.py [--tool ncu|compute-sanitizer] [--audit]

Compiles a one-kernel CUDA program, then runs the tool on it under variants of `confine.tool_policy`: unconfined,
the policy itself, the policy with the network allowed, and with every file readable, writable and executable.
For each it prints the exit status, whether the tool saw the kernel, and the tool's own error lines. With
--audit (root, a kernel with audit), the kernel log's Landlock denial records (Landlock ABI 7 logs what it refuses)
written while the policy variant ran are printed: the paths the policy must still grant. Needs a GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker.engine import confine, sandbox  # noqa: E402
from worker.engine.harness import HARNESS_LIMITS  # noqa: E402

PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void probe_kernel(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = i; }
int main() {
  float* d = nullptr;
  cudaError_t e = cudaMalloc(&d, 1 << 20);
  if (e == cudaSuccess) { probe_kernel<<<1024, 256>>>(d, 1 << 18); e = cudaDeviceSynchronize(); }
  std::printf("probe: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 3;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", default="ncu", choices=("ncu", "compute-sanitizer"))
    ap.add_argument("--audit", action="store_true", help="print the kernel's Landlock denial records (root)")
    args = ap.parse_args()
    tool, nvcc = shutil.which(args.tool), shutil.which("nvcc")
    if not tool or not nvcc:
        print(f"needs {args.tool} and nvcc on PATH", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="kw-tool-probe-"))
    (root / "probe.cu").write_text(PROGRAM)
    subprocess.run([nvcc, "-o", str(root / "probe"), str(root / "probe.cu")], check=True)
    program = str(root / "probe")
    argv = [tool, "--metrics", "gpu__time_duration.sum", program] if args.tool == "ncu" else [tool, program]
    base = confine.candidate_run(program, root, tool=tool)
    everything = dataclasses.replace(base, read=("/",), write=("/",), execute=("/",), devices=("/dev",))
    variants = [("unconfined", None), ("tool policy", base), ("+ network", dataclasses.replace(base, network=True)),
                ("+ every file", everything)]
    print("| variant | exit | kernel seen | tool's error lines |\n|---|---|---|---|")
    for name, policy in variants:
        work = Path(tempfile.mkdtemp(dir=root))
        res = sandbox.run(argv, work, 180, name="probe", limits=HARNESS_LIMITS, policy=policy)
        lines = (res.stdout + res.stderr).splitlines()
        errors = [ln.strip() for ln in lines if re.search(r"==ERROR==|rror|denied|not permitted", ln)][-3:]
        print(f"| {name} | {res.returncode} | {any('probe_kernel' in ln for ln in lines)} | "
              f"{' / '.join(errors)[:300] or '-'} |")
    if args.audit:
        before = _kernel_log()
        sandbox.run(argv, Path(tempfile.mkdtemp(dir=root)), 180, name="audit", limits=HARNESS_LIMITS, policy=base)
        denied = [ln for ln in _kernel_log()[len(before):] if "landlock" in ln.lower()]
        print(f"\nLandlock denial records while the tool policy ran: {len(denied)}")
        print("\n".join(denied[-60:]))
    return 0


def _kernel_log() -> list[str]:
    done = subprocess.run(["dmesg"], capture_output=True, text=True)
    return done.stdout.splitlines() if done.returncode == 0 else []


if __name__ == "__main__":
    sys.exit(main())
