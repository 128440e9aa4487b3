"""How steady the host's speed is from one process to the next (docs/benchmarks.md, "The host's speed between
processes"): whether a GPU host can repeat the time of a call that does host work at all.

    python bench/host_speed.py [--processes 10] [--per-cpu] [--blocks 40] [--no-aslr] [--arch sm_90] [--binary PATH]

Builds bench/host_speed.cu with nvcc (or takes a binary built elsewhere: `nvcc -O2 -arch=sm_90 -o host_speed
bench/host_speed.cu`, carried to the GPU machine), runs it in --processes fresh processes one after another
(unpinned, as the evaluator's timing processes run), and with --per-cpu first once pinned to each CPU this process
may use. Each process times FFT's per-call host tables and a runtime round trip (a launch, a 4-byte copy, a
synchronize); the table prints each process's medians, and the summary how far they spread: (max - min) / median / 2
(the "±" of bench/sample_shapes.py) and max / min. It also reads the steal time of /proc/stat before and after: a
host loop whose time moves while steal stays 0 and the thread's CPU time moves with it ran on a slower CPU, not
less of it. --blocks B then times the host tables in B blocks of 300 inside one more process (does the speed move
within a process, from second to second, or only between processes?); --no-aslr starts every process with one
fixed address layout (`setarch -R`: is it where the process's memory lies?).

A host where the fresh processes' host figures spread by more than about 1 % cannot repeat within 2 % the P of a
task whose calls do host work (FFT's tables, layer_norm's and rms_norm's round trips), in any timing protocol
that counts the host's time, which the evaluator must (docs/evaluation.md, "Timing protocol").
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).with_name("host_speed.cu")


@dataclass(frozen=True)
class Process:
    """One run of the probe: where it ended and its medians (microseconds; trip is NaN without a GPU)."""

    pinned: int | None
    cpu: int
    host: float
    host_p10: float
    thread: float
    trip: float
    trip_p10: float


def build(arch: str) -> Path:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        sys.exit("nvcc not found: build elsewhere and pass --binary")
    out = Path(tempfile.mkdtemp(prefix="kw-host-speed-")) / "host_speed"
    subprocess.run([nvcc, "-O2", f"-arch={arch}", "-o", str(out), str(SOURCE)], check=True)
    return out


def steal_ticks() -> int | None:
    """The system's steal time so far (USER_HZ ticks), or None where /proc/stat does not say."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
        return int(fields[8])
    except (OSError, IndexError, ValueError):
        return None


def no_aslr() -> None:
    """This process and what it execs from now on get one fixed address layout (what `setarch -R` does)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    current = libc.personality(0xFFFFFFFF)
    if current == -1 or libc.personality(current | 0x0040000) == -1:  # ADDR_NO_RANDOMIZE
        sys.exit(f"personality(ADDR_NO_RANDOMIZE) failed: errno {ctypes.get_errno()}")


def run_once(binary: Path, pin: int | None) -> Process:
    preexec = (lambda: os.sched_setaffinity(0, {pin})) if pin is not None else None
    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120, preexec_fn=preexec)
    if run.returncode != 0:
        sys.exit(f"{binary} exited with {run.returncode}: {run.stderr.strip()[-500:]}")
    w = run.stdout.split()  # cpu C host MEDIAN P10 thread MEDIAN trip MEDIAN P10
    try:
        if len(w) != 10 or (w[0], w[2], w[5], w[7]) != ("cpu", "host", "thread", "trip"):
            raise ValueError
        return Process(pin, int(w[1]), float(w[3]), float(w[4]), float(w[6]), float(w[8]), float(w[9]))
    except ValueError:
        sys.exit(f"{binary} printed what this script does not read: {run.stdout.strip()[:300]!r}")


def blocks_in_one_process(binary: Path, blocks: int) -> list[str]:
    """The host tables in `blocks` blocks one after another inside one process: the speed over seconds."""
    run = subprocess.run([str(binary), str(blocks)], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        sys.exit(f"{binary} exited with {run.returncode}: {run.stderr.strip()[-500:]}")
    try:
        rows = [(int(w[1]), int(w[3]), float(w[5])) for w in map(str.split, run.stdout.splitlines())
                if len(w) == 6 and (w[0], w[2], w[4]) == ("block", "cpu", "host")]
    except ValueError:
        rows = []
    if len(rows) != blocks:
        sys.exit(f"{binary} printed what this script does not read: {run.stdout.strip()[:300]!r}")
    per_block = ", ".join(f"{host:.0f}" for _, _, host in rows)
    cpus = sorted({cpu for _, cpu, _ in rows})
    return [f"**{blocks} blocks of 300 host tables in one process** (CPUs {', '.join(map(str, cpus))})", "",
            f"per-block medians (us): {per_block}", "",
            f"host tables inside one process: {spread([host for _, _, host in rows])}", ""]


def spread(values: list[float]) -> str:
    values = [v for v in values if v == v]  # NaN: no GPU
    if len(values) < 2:
        return "n/a"
    mid = statistics.median(values)
    return f"±{(max(values) - min(values)) / mid / 2 * 100:.1f} %, max / min {max(values) / min(values):.2f}"


def table(title: str, runs: list[Process]) -> list[str]:
    lines = [f"**{title}**", "", "| pinned to | ran on CPU | host tables (us), median | p10 | thread CPU time (us) "
             "| round trip (us), median | p10 |", "|---|---|---|---|---|---|---|"]
    for r in runs:
        pinned = "-" if r.pinned is None else str(r.pinned)
        trip = "n/a | n/a" if r.trip != r.trip else f"{r.trip:.2f} | {r.trip_p10:.2f}"  # NaN: no GPU
        lines.append(f"| {pinned} | {r.cpu} | {r.host:.1f} | {r.host_p10:.1f} | {r.thread:.1f} | {trip} |")
    lines += ["", f"host tables: {spread([r.host for r in runs])}; round trip: {spread([r.trip for r in runs])}", ""]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=10, help="fresh unpinned processes, one after another")
    ap.add_argument("--per-cpu", action="store_true", help="first one process pinned to each CPU allowed")
    ap.add_argument("--blocks", type=int, default=0, help="then one process timing this many blocks of host tables")
    ap.add_argument("--no-aslr", action="store_true", help="every process with one fixed address layout")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--binary", type=Path, help="a host_speed binary built elsewhere")
    args = ap.parse_args()
    if args.processes < 2:
        ap.error("--processes needs at least 2: the spread is between processes")
    binary = args.binary or build(args.arch)
    if args.no_aslr:
        no_aslr()  # inherited by every process started below
    steal_before = steal_ticks()
    out: list[str] = []
    if args.per_cpu:
        out += table("One process pinned to each CPU", [run_once(binary, c) for c in sorted(os.sched_getaffinity(0))])
    out += table(f"{args.processes} fresh processes, unpinned{', one fixed address layout' if args.no_aslr else ''}",
                 [run_once(binary, None) for _ in range(args.processes)])
    if args.blocks > 0:
        out += blocks_in_one_process(binary, args.blocks)
    steal_after = steal_ticks()
    steal = "n/a" if steal_before is None or steal_after is None else str(steal_after - steal_before)
    print("\n".join(out + [f"steal time over the runs: {steal} ticks (/proc/stat)"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
