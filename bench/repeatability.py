"""Timing repeatability of the C/CUDA harness, before and after batched timing (docs/benchmarks.md).

    python bench/repeatability.py [--task softmax ...] [--precision fp32] [--iters 50] [--json out.json]
                                  [--resume earlier.json]

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
Without a GPU it only builds (and prints the tables of the resumed tasks).

--resume takes the --json of an earlier run cut short (a time limit): its tasks are not built or timed again,
and their timings stay in the --json written and in every table and summary line, beside the new ones.
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


def load_saved(path: str) -> list[dict]:
    """The entries of an earlier --json, with each run's size indices back to integers (JSON keys are strings)."""
    entries = json.loads(Path(path).read_text())
    for entry in entries:
        entry["runs"] = {tag: {int(i): t for i, t in run.items()} for tag, run in entry["runs"].items()}
    return entries


def summarize(spec, precision: str, runs: dict) -> tuple[tuple, list[tuple]]:
    """One task's row (P repeat before and after) and its rows per size (call time, batch, worse CV of each)."""
    ref = runs["reference"]
    repeat = {k: abs(p_of(spec, runs[f"{k}-1"], ref) / p_of(spec, runs[f"{k}-2"], ref) - 1)
              for k in ("before", "after")}
    sizes_rows = []
    for i, size in enumerate(spec.sizes):
        before = max(runs["before-1"][i]["cv"], runs["before-2"][i]["cv"])
        after = max(runs["after-1"][i]["cv"], runs["after-2"][i]["cv"])
        sizes_rows.append((spec.name, precision, ", ".join(f"{k}={v:g}" for k, v in size.items()),
                           ref[i]["mean_ms"] * 1000, runs["after-1"][i].get("batch", 1), before, after))
    return (spec.name, precision, repeat["before"], repeat["after"]), sizes_rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", action="append", help="only these operators (repeatable)")
    parser.add_argument("--precision", choices=PRECISIONS)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--json", help="write every timing here")
    parser.add_argument("--resume", help="an earlier --json: its tasks are kept (tables included), not timed again")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel builds")
    args = parser.parse_args(argv)

    all_specs = {s.name: s for s in discover_tasks(TASKS, backends=("cuda",)).specs}
    specs = [s for s in all_specs.values() if not args.task or s.name in args.task]
    precisions = [args.precision] if args.precision else list(PRECISIONS)
    saved = []  # every timed task, the resumed ones first
    for entry in load_saved(args.resume) if args.resume else []:
        if entry["task"] in all_specs:
            saved.append(entry)
        else:
            print(f"  resumed {entry['task']}[{entry['precision']}]: no such task now; dropped", file=sys.stderr)
    done = {(e["task"], e["precision"]) for e in saved}
    cases = [(s, p) for s in specs for p in precisions if p in s.interfaces and (s.name, p) not in done]
    chain = tc.detect()
    print(f"{len(cases)} tasks{f' ({len(saved)} more resumed from {args.resume})' if args.resume else ''}; "
          f"GPU: {chain.gpu.name if chain.gpu else 'none (' + chain.gpu_reason + ')'}; "
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
    if chain.gpu is None and not saved:
        return 0

    started, timed = time.monotonic(), 0
    for spec, precision in cases if chain.gpu else []:  # without a GPU, only the resumed tasks' tables
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
        timed += 1
        if args.json:  # after every task: a run cut short keeps what it timed
            Path(args.json).write_text(json.dumps(saved, indent=1))
        (_, _, before, after), _ = summarize(spec, precision, runs)
        print(f"  {spec.name}[{precision}]: P repeat {before * 100:.2f} % -> {after * 100:.2f} %", flush=True)
    print(f"timed {timed} tasks in {time.monotonic() - started:.0f} s; {len(saved)} in the tables below")

    rows, sizes_rows = [], []  # from every saved task, resumed and new
    for entry in saved:
        row, per_size = summarize(all_specs[entry["task"]], entry["precision"], entry["runs"])
        rows.append(row)
        sizes_rows += per_size
    print("\n| task | prec | size | call (us) | batch | CV before | CV after |")
    print("|---|---|---|---|---|---|---|")
    for name, prec, size, us, batch, before, after in sizes_rows:
        print(f"| {name} | {prec} | {size} | {us:.1f} | {batch} | {before * 100:.2f}% | {after * 100:.2f}% |")
    print("\n| task | prec | sizes | call (us) | P repeat before | P repeat after | "
          "sizes >= 10 us with CV >= 2 %, before | after |")
    print("|---|---|---|---|---|---|---|---|")
    for name, prec, before, after in rows:
        mine = [r for r in sizes_rows if r[0] == name and r[1] == prec]
        long_calls = [r for r in mine if r[3] >= 10]
        calls = f"{min(r[3] for r in mine):.1f} - {max(r[3] for r in mine):.1f}"
        counts = [f"{sum(1 for r in long_calls if r[col] >= 0.02)} of {len(long_calls)}" for col in (5, 6)]
        print(f"| {name} | {prec} | {len(mine)} | {calls} | {before * 100:.2f}% | {after * 100:.2f}% | "
              f"{counts[0]} | {counts[1]} |")
    groups = sorted({r[1] for r in rows}, key=list(PRECISIONS).index)
    for group in groups + (["all"] if len(groups) > 1 else []):  # each precision, then both together
        these = [r for r in rows if group in ("all", r[1])]
        label = "" if len(groups) == 1 else f"{group} "
        for k, col in (("before", 2), ("after", 3)):
            within = sum(1 for r in these if r[col] <= 0.02)
            print(f"{label}{k}: P within 2 % for {within} of {len(these)} tasks ({within / len(these) * 100:.0f} %)")
        long_calls = [r for r in sizes_rows if r[3] >= 10 and group in ("all", r[1])]
        for k, col in (("before", 5), ("after", 6)):
            over = [r for r in long_calls if r[col] >= 0.02]
            print(f"{label}{k}: CV of 2 % or more at {len(over)} of {len(long_calls)} sizes whose call takes 10 us "
                  "or more")
    if args.json:
        Path(args.json).write_text(json.dumps(saved, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
