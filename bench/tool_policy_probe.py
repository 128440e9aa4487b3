"""Which part of the tool policy keeps a profiler's target from running (docs/gpu-validation.md, "Not yet run").

    python bench/tool_policy_probe.py [--tool ncu|compute-sanitizer] [--sections filtered|full] [--tail N]
                                      [--audit] [--bisect]

Compiles a one-kernel CUDA program, then runs the tool on it under variants of `confine.tool_policy`: unconfined,
the policy itself, the policy with the network allowed, and with every file readable, writable and executable
(with --sections, ncu runs with the worker's own profile options instead of one metric).
For each it prints the exit status, whether the tool saw the kernel, and the tool's own error lines. With
--audit (root, a kernel with audit), the kernel log's Landlock denial records (Landlock ABI 7 logs what it refuses)
written while the policy variant ran are printed: the paths the policy must still grant. Where the kernel keeps
no such records, --bisect finds them by trial: which kind of access (read, write, execute, devices) granted on
all of / lets the tool work, then which folder, halving the candidates and descending into the one found.
Needs a GPU.
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

from worker.engine import confine, ncu, sandbox  # noqa: E402
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
    ap.add_argument("--bisect", action="store_true", help="find by trial the paths the tool policy lacks")
    ap.add_argument("--sections", choices=("filtered", "full"), help="ncu with the worker's sections of this mode")
    ap.add_argument("--tail", type=int, default=0, help="print the last N lines of each variant's output")
    args = ap.parse_args()
    tool, nvcc = shutil.which(args.tool), shutil.which("nvcc")
    if not tool or not nvcc:
        print(f"needs {args.tool} and nvcc on PATH", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="kw-tool-probe-"))
    (root / "probe.cu").write_text(PROGRAM)
    subprocess.run([nvcc, "-o", str(root / "probe"), str(root / "probe.cu")], check=True)
    program = str(root / "probe")
    if args.tool != "ncu":
        argv = [tool, program]
    elif args.sections:  # the worker's profile command line: its sections, kernel filter and CSV page
        argv = [*ncu.ncu_argv(tool, args.sections, "probe_kernel", True), program]
    else:
        argv = [tool, "--metrics", "gpu__time_duration.sum", program]
    base = confine.candidate_run(program, root, tool=tool)
    everything = dataclasses.replace(base, read=("/",), write=("/",), execute=("/",), devices=("/dev",))
    variants = [("unconfined", None), ("tool policy", base), ("+ network", dataclasses.replace(base, network=True)),
                ("+ every file", everything)]
    print("| variant | exit | kernel seen | tool's error lines |\n|---|---|---|---|")
    for name, policy in variants:
        work = Path(tempfile.mkdtemp(dir=root))
        res = sandbox.run(argv, work, 180, name="probe", limits=HARNESS_LIMITS, policy=policy)
        lines = (res.stdout + res.stderr).splitlines()
        errors = [ln.strip() for ln in lines if re.search(r"(?i)error|denied|not permitted", ln)][-3:]
        errors = errors or [ln.strip() for ln in lines if ln.strip()][-3:]  # ncu may fail with no error line
        print(f"| {name} | {res.returncode} | {_profiled(res, args.sections)} | "
              f"{' / '.join(errors)[:300] or '-'} |")
        if args.tail:
            print("\n".join(f"    {ln}" for ln in lines[-args.tail:]))
    if args.bisect:
        _bisect(argv, root, base, args.sections)
    if args.audit:
        before = _kernel_log()
        sandbox.run(argv, Path(tempfile.mkdtemp(dir=root)), 180, name="audit", limits=HARNESS_LIMITS, policy=base)
        denied = [ln for ln in _kernel_log()[len(before):] if "landlock" in ln.lower()]
        print(f"\nLandlock denial records while the tool policy ran: {len(denied)}")
        print("\n".join(denied[-60:]))
    return 0


def _profiled(res: sandbox.SandboxResult, sections: str | None) -> bool:
    """Whether the tool saw the kernel: with the worker's sections, whether the worker would parse a profile."""
    if not sections:
        return "probe_kernel" in res.stdout + res.stderr
    try:
        return bool(ncu.parse_details_csv(Path(res.stdout_path).read_text(encoding="utf-8", errors="replace")))
    except (OSError, ValueError):
        return False


def _bisect(argv: list[str], root: Path, base: confine.Policy, sections: str | None) -> None:
    runs = 0

    def works(**grant: tuple[str, ...]) -> bool:
        nonlocal runs
        runs += 1
        policy = dataclasses.replace(base, **{k: (*getattr(base, k), *v) for k, v in grant.items()})
        res = sandbox.run(argv, Path(tempfile.mkdtemp(dir=root)), 180, name="bisect", limits=HARNESS_LIMITS,
                          policy=policy)
        return _profiled(res, sections)

    def children(folder: str) -> list[str]:
        try:
            return sorted(str(p) for p in Path(folder).iterdir() if not p.is_symlink())
        except OSError:
            return []

    def smallest(kind: str, paths: list[str]) -> list[str]:
        """A small subset of `paths` that, granted, lets the tool work (halving while one half suffices)."""
        while len(paths) > 1:
            half = len(paths) // 2
            if works(**{kind: tuple(paths[:half])}):
                paths = paths[:half]
            elif works(**{kind: tuple(paths[half:])}):
                paths = paths[half:]
            else:
                break  # both halves needed: report them all
        return paths

    print("\n| access granted on every path | tool works |\n|---|---|")
    for kind, top in (("write", "/"), ("read", "/"), ("execute", "/"), ("devices", "/dev")):
        ok = works(**{kind: (top,)})
        print(f"| {kind} {top} | {ok} |")
        if not ok:
            continue
        found = [top]
        while len(found) == 1 and (inner := children(found[0])) and works(**{kind: tuple(inner)}):
            found = smallest(kind, inner)
        print(f"\n{kind} access the tool policy lacks: {', '.join(found)}")
    print(f"\n{runs} runs of the tool")


def _kernel_log() -> list[str]:
    done = subprocess.run(["dmesg"], capture_output=True, text=True)
    return done.stdout.splitlines() if done.returncode == 0 else []


if __name__ == "__main__":
    sys.exit(main())
