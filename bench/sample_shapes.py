"""How far a sample's shape lets a time move between processes (docs/benchmarks.md, "Queued samples").

    python bench/sample_shapes.py [--processes 6] [--arch sm_90] [--binary PATH] [--pin CPU]

Builds bench/sample_shapes.cu with nvcc (or takes a binary built elsewhere: build on a CPU machine with
`nvcc -O3 -arch=sm_90 -I tasks/_harness -o sample_shapes bench/sample_shapes.cu` and carry it), runs it in
--processes processes one after another on an otherwise idle GPU, and prints per kernel, size and shape: the
median of the per-process medians, how far they spread ((max - min) / median / 2, the "±"), and the worst CV
inside one process.
Shapes: A synchronized (the harness's default), B queued behind a spacer, C queued, 20 calls per event pair,
D queued but waiting inside the span (a call that ends in its own synchronize), E synchronized start with no
wait inside the span (A's launch latency without its wake-up), F D's call with the stop event recorded before its
own synchronize and the host's time after that synchronize added back (its wake-up left out).
--pin runs every process on that one CPU (sched_setaffinity): whether the synchronized shape's offsets between
processes come from where the scheduler puts each process (a core near the GPU or far from it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

SOURCE = Path(__file__).with_name("sample_shapes.cu")
HARNESS = Path(__file__).resolve().parents[1] / "tasks" / "_harness"  # kw_timed.cuh: the harness's spacer kernel
SHAPES = {"A": "synchronized", "B": "queued", "C": "queued x20", "D": "queued, waits inside",
          "E": "launch, no wait", "F": "queued, stopped at the call's synchronize"}


def build(arch: str) -> Path:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        sys.exit("nvcc not found: build elsewhere and pass --binary")
    out = Path(tempfile.mkdtemp(prefix="kw-shapes-")) / "sample_shapes"
    subprocess.run([nvcc, "-O3", f"-arch={arch}", "-I", str(HARNESS), "-o", str(out), str(SOURCE)], check=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--binary", type=Path, help="a sample_shapes binary built elsewhere")
    ap.add_argument("--pin", type=int, metavar="CPU", help="run every process on this CPU only")
    args = ap.parse_args()
    binary = args.binary or build(args.arch)
    medians: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    cvs: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    for _ in range(args.processes):
        pin = (lambda: os.sched_setaffinity(0, {args.pin})) if args.pin is not None else None
        run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=600, preexec_fn=pin)
        if run.returncode != 0:
            print(run.stderr, file=sys.stderr)
            return run.returncode
        for line in run.stdout.splitlines():
            kernel, n, shape, median, cv = line.split()
            medians[kernel, int(n), shape].append(float(median))
            cvs[kernel, int(n), shape].append(float(cv))
    where = f", each on CPU {args.pin}" if args.pin is not None else ""
    print(f"{args.processes} processes, 50 samples each{where}\n")
    print("| kernel | N | shape | median (us) | spread between processes | worst CV in a process |")
    print("|---|---|---|---|---|---|")
    for (kernel, n, shape), values in medians.items():
        mid = statistics.median(values)
        spread = (max(values) - min(values)) / mid / 2
        print(f"| {kernel} | 2^{n.bit_length() - 1} | {SHAPES[shape]} | {mid:.2f} | ±{spread * 100:.1f} % | "
              f"{max(cvs[kernel, n, shape]) * 100:.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
