"""Benchmark the evaluation engine on every task baseline (both precisions).

    .venv/bin/python bench/eval_baselines.py [--task vector_add] [--precision fp32] [--profile filtered]
                                             [--iters 50] [--compile-only] [--json out.json]

Two passes over the library with one fresh build cache: the first compiles
everything (cold), the second shows the cache at work. Per task and precision
it prints the compile time, the evaluation wall time (build and profiler
excluded: the timing runs, process starts, allocation, input setup, L2 flushes),
the time spent inside timed kernels (samples x mean), the evaluation overhead
(wall - kernel time), the timing CV at the largest size and the profile time. Baseline timings are
never taken from the timing cache here. Without a GPU, --compile-only still
measures the builds.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker.engine import toolchain as tc  # noqa: E402
from worker.engine.results import Evaluation  # noqa: E402
from worker.engine.taskspec import PRECISIONS
from worker.formats.cuda.build import build  # noqa: E402
from worker.formats.cuda.evaluation import EvalOptions, evaluate_baseline  # noqa: E402
from worker.registry import discover_tasks  # noqa: E402

TASKS = Path(__file__).resolve().parents[1] / "tasks"
COLUMNS = (
    "task",
    "prec",
    "verdict",
    "compile s",
    "cached",
    "wall s",
    "kernels s",
    "overhead s",
    "overhead",
    "CV@largest",
    "profile s",
)


@dataclasses.dataclass(frozen=True)
class Row:
    task: str
    precision: str
    verdict: str
    compile_s: float
    cache_hits: str
    wall_s: float
    kernel_s: float | None
    profile_s: float | None
    cv_largest: float | None

    @property
    def overhead_s(self) -> float | None:
        return None if self.kernel_s is None else self.wall_s - self.kernel_s

    def cells(self) -> tuple[str, ...]:
        def f(v: float | None, fmt: str) -> str:
            return "-" if v is None else format(v, fmt)

        share = (
            None if self.kernel_s is None or self.wall_s <= 0 else (self.wall_s - self.kernel_s) / self.wall_s
        )
        return (
            self.task,
            self.precision,
            self.verdict,
            f(self.compile_s, ".2f"),
            self.cache_hits or "-",
            f(self.wall_s, ".2f"),
            f(self.kernel_s, ".3f"),
            f(self.overhead_s, ".2f"),
            f(share, ".0%"),
            f(self.cv_largest, ".2%"),
            f(self.profile_s, ".2f"),
        )


def kernel_seconds(ev: Evaluation) -> float | None:
    """Time spent inside the timed calls: sum over sizes of samples x mean."""
    stats = [s.baseline for s in ev.sizes]
    if not stats or any(t is None for t in stats):
        return None
    return sum(t.samples * t.mean_ms for t in stats if t is not None) / 1000.0


def cv_at_largest(ev: Evaluation) -> float | None:
    if not ev.sizes:
        return None
    largest = max(ev.sizes, key=lambda s: s.complexity)
    return largest.baseline.cv if largest.baseline else None


def run_one(spec, precision, chain, options, compile_only: bool) -> tuple[Row, dict]:
    if compile_only:
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kw-bench-") as work:
            built = build(spec, precision, chain, None, work_dir=work, cache_dir=options.build_cache)
        wall = time.monotonic() - start
        verdict = "built" if built.ok else "compile_error"
        row = Row(
            spec.name, precision, verdict, built.seconds, ",".join(built.cache_hits), wall, None, None, None
        )
        return row, {"task": spec.name, "precision": precision, "verdict": verdict, "seconds": built.seconds}
    ev = evaluate_baseline(spec, precision, options, chain=chain)
    hits = "yes" if ev.compile is not None and ev.compile.cached else ""
    # Evaluation wall time: everything but the build and the profiler (both have their own column).
    wall = ev.phases.get("total", 0.0) - ev.phases.get("compile", 0.0) - ev.phases.get("profile", 0.0)
    row = Row(
        spec.name,
        precision,
        str(ev.verdict),
        ev.phases.get("compile", 0.0),
        hits,
        wall,
        kernel_seconds(ev),
        ev.phases.get("profile"),
        cv_at_largest(ev),
    )
    return row, ev.to_dict()


def table(rows: list[Row]) -> str:
    cells = [COLUMNS] + [r.cells() for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(c.rjust(w) if i > 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks-root", default=str(TASKS))
    parser.add_argument("--task", action="append", help="only these tasks (repeatable)")
    parser.add_argument("--precision", choices=PRECISIONS)
    parser.add_argument(
        "--profile",
        choices=("filtered", "full", "none"),
        default=None,
        help="default: filtered when ncu is installed, else none",
    )
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--runs", type=int, default=2, help="passes over the library (2 shows the cache)")
    parser.add_argument("--compile-only", action="store_true", help="only build (works without a GPU)")
    parser.add_argument("--json", help="write every Evaluation here")
    args = parser.parse_args(argv)

    chain = tc.detect()
    found = discover_tasks(Path(args.tasks_root), backends=("cuda",))
    specs = [s for s in found.specs if not args.task or s.name in args.task]
    precisions = [args.precision] if args.precision else list(PRECISIONS)
    cases = [(s, p) for s in specs for p in precisions if p in s.interfaces]
    if not cases:
        print(f"no tasks under {args.tasks_root}", file=sys.stderr)
        return 1
    if chain.gpu is None and not args.compile_only:
        print(
            f"no GPU here ({chain.gpu_reason}): rerun with --compile-only to time the builds alone",
            file=sys.stderr,
        )
        return 3
    profile = args.profile or ("filtered" if chain.ncu and chain.gpu else "none")
    cache = tempfile.mkdtemp(prefix="kw-bench-cache-")
    options = EvalOptions(
        iters=args.iters,
        profile=profile,
        use_baseline_cache=False,
        build_cache=cache,
        timing_cache=tempfile.mkdtemp(prefix="kw-bench-times-"),
    )

    print(
        f"# eval_baselines  {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}  host {platform.node()}"
    )
    print(
        f"# GPU {chain.gpu.name if chain.gpu else 'none (' + chain.gpu_reason + ')'}  arch {chain.arch}  "
        f"nvcc {chain.nvcc_version}  ncu {chain.ncu_version or '-'}  iters {args.iters}  profile {profile}"
    )
    results = []
    for run in range(1, args.runs + 1):
        label = "cold build cache" if run == 1 else "warm build cache"
        print(f"\n## run {run} ({label}; baseline timings measured, not cached)", flush=True)
        rows = []
        for spec, precision in cases:
            print(f"  {spec.name} [{precision}] ...", file=sys.stderr, flush=True)
            row, record = run_one(spec, precision, chain, options, args.compile_only)
            rows.append(row)
            results.append({"run": run, **record})
            # Each row as soon as it exists, and the JSON rewritten: a run cut short still reports.
            print("  done  " + "  ".join(row.cells()), file=sys.stderr, flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
        print(table(rows))
        evaluation = sum(r.wall_s for r in rows)
        compile_total = sum(r.compile_s for r in rows)
        cvs = sorted(r.cv_largest for r in rows if r.cv_largest is not None)
        median_cv = f", median CV at the largest size {statistics.median(cvs):.2%}" if cvs else ""
        print(f"totals: compile {compile_total:.1f} s, evaluation {evaluation:.1f} s{median_cv}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
