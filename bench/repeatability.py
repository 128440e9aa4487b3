"""Timing repeatability of the C/CUDA harness, before and after batched timing (docs/benchmarks.md).

    python bench/repeatability.py [--task softmax ...] [--precision fp32] [--iters 50] [--json out.json]

For every task (and precision) the baseline-only harness is built once; then, one process after another
on an otherwise idle GPU, its baseline is timed in `time` mode five times:

- twice with the default protocol, one launch per event pair ("before");
- twice with batching ("after": --batch-below-ms 0.05, calls shorter than 50 us timed in batches on
  distinct buffer sets, kw_timed.cuh);
- once more with the default protocol, as the fixed reference a P is computed against.

Per size it prints the CV of each protocol (the worse of its two runs) and the kernel's time. Per task it
prints how far P moves between two separate processes: P_k = sum_i w_i * ref_i / t_k,i / sum_i w_i with
w_i the size's complexity (as the scoring does), and repeat = |P_1 / P_2 - 1|, before and after. The goals
(issue 17): P within 2 % for at least 95 % of the tasks; CV under 2 % wherever a call takes 10 us or more.
Without a GPU it only builds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker.engine import toolchain as tc  # noqa: E402
from worker.engine.harness import harness_argv, read_result  # noqa: E402
from worker.engine.sandbox import run as run_sandboxed  # noqa: E402
from worker.engine.taskspec import PRECISIONS  # noqa: E402
from worker.formats.cuda.build import build, default_cache_dir  # noqa: E402
from worker.registry import discover_tasks  # noqa: E402

TASKS = Path(__file__).resolve().parents[1] / "tasks"
BEFORE = []  # the default protocol: every call its own event pair
AFTER = ["--batch-below-ms", "0.05"]  # calls under 50 us timed in batches on distinct buffer sets


def time_once(exe: str, spec, precision: str, work: Path, extra: list[str], iters: int, tag: str) -> dict | None:
    out = work / f"{tag}.json"
    out.unlink(missing_ok=True)
    argv = harness_argv(exe, spec, precision, "time", "baseline", [dict(s) for s in spec.sizes], str(out), iters=iters)
    res = run_sandboxed(argv[:-2] + extra + argv[-2:], work, 900, name=tag)
    data = read_result(out) if out.is_file() else None
    if not res.ok or not data or data.get("error"):
        print(f"  {tag}: failed: {(data or {}).get('error') or res.stderr[-300:]}", file=sys.stderr)
        return None
    return {int(s["index"]): s["timing"] for s in data["sizes"]}


def p_of(spec, run: dict, ref: dict) -> float:
    weights = [spec.complexity_of(s) for s in spec.sizes]
    speedups = [ref[i]["mean_ms"] / run[i]["mean_ms"] for i in range(len(spec.sizes))]
    return sum(w * s for w, s in zip(weights, speedups, strict=True)) / sum(weights)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", action="append", help="only these operators (repeatable)")
    parser.add_argument("--precision", choices=PRECISIONS)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--json", help="write every timing here")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel builds")
    args = parser.parse_args(argv)

    specs = [s for s in discover_tasks(TASKS, backends=("cuda",)).specs if not args.task or s.name in args.task]
    precisions = [args.precision] if args.precision else list(PRECISIONS)
    cases = [(s, p) for s in specs for p in precisions if p in s.interfaces]
    chain = tc.detect()
    print(f"{len(cases)} tasks; GPU: {chain.gpu.name if chain.gpu else 'none (' + chain.gpu_reason + ')'}; "
          f"{args.iters} timed calls per size", flush=True)
    root = Path(tempfile.mkdtemp(prefix="kw-repeat-"))
    exes = {}

    def build_one(case):
        spec, precision = case
        return case, build(spec, precision, chain, None, work_dir=root / f"{spec.name}-{precision}",
                           cache_dir=os.environ.get("KW_BUILD_CACHE") or default_cache_dir())

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # builds in parallel; timing below is serial
        for (spec, precision), built in pool.map(build_one, cases):
            if not built.ok:
                print(f"  build failed: {spec.name}[{precision}]", file=sys.stderr)
                continue
            exes[(spec.name, precision)] = built.executable
    print(f"built {len(exes)} of {len(cases)}")
    if chain.gpu is None:
        return 0

    rows, sizes_rows, saved = [], [], []
    started = time.monotonic()
    for spec, precision in cases:
        exe = exes.get((spec.name, precision))
        if exe is None:
            continue
        work = root / f"{spec.name}-{precision}"
        runs = {tag: time_once(exe, spec, precision, work, extra, args.iters, tag)
                for tag, extra in (("before-1", BEFORE), ("before-2", BEFORE), ("after-1", AFTER), ("after-2", AFTER),
                                   ("reference", []))}
        if any(r is None for r in runs.values()):
            continue
        saved.append({"task": spec.name, "precision": precision, "runs": runs})
        if args.json:  # after every task: a run cut short keeps what it timed
            Path(args.json).write_text(json.dumps(saved, indent=1))
        ref = runs["reference"]
        repeat = {k: abs(p_of(spec, runs[f"{k}-1"], ref) / p_of(spec, runs[f"{k}-2"], ref) - 1)
                  for k in ("before", "after")}
        for i, size in enumerate(spec.sizes):
            before = max(runs["before-1"][i]["cv"], runs["before-2"][i]["cv"])
            after = max(runs["after-1"][i]["cv"], runs["after-2"][i]["cv"])
            sizes_rows.append((spec.name, precision, ", ".join(f"{k}={v:g}" for k, v in size.items()),
                               ref[i]["mean_ms"] * 1000, runs["after-1"][i].get("batch", 1), before, after))
        rows.append((spec.name, precision, repeat["before"], repeat["after"]))
        print(f"  {spec.name}[{precision}]: P repeat {repeat['before'] * 100:.2f} % -> {repeat['after'] * 100:.2f} %",
              flush=True)
    print(f"timed {len(rows)} tasks in {time.monotonic() - started:.0f} s")

    print("\n| task | prec | size | call (us) | batch | CV before | CV after |")
    print("|---|---|---|---|---|---|---|")
    for name, prec, size, us, batch, before, after in sizes_rows:
        print(f"| {name} | {prec} | {size} | {us:.1f} | {batch} | {before * 100:.2f}% | {after * 100:.2f}% |")
    print("\n| task | prec | P repeat before | P repeat after |")
    print("|---|---|---|---|")
    for name, prec, before, after in rows:
        print(f"| {name} | {prec} | {before * 100:.2f}% | {after * 100:.2f}% |")
    if rows:
        for k, col in (("before", 2), ("after", 3)):
            within = sum(1 for r in rows if r[col] <= 0.02)
            print(f"{k}: P within 2 % for {within} of {len(rows)} tasks ({within / len(rows) * 100:.0f} %)")
        long_calls = [r for r in sizes_rows if r[3] >= 10]
        for k, col in (("before", 5), ("after", 6)):
            over = [r for r in long_calls if r[col] >= 0.02]
            print(f"{k}: CV of 2 % or more at {len(over)} of {len(long_calls)} sizes whose call takes 10 us or more")
    if args.json:
        Path(args.json).write_text(json.dumps(saved, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
