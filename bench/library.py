"""The whole task library in one command: compile in parallel, validate, time baselines and references.

    .venv/bin/python bench/library.py [--validate] [--time] [--census] [--task softmax ...] [--precision fp32]
                                      [--jobs N] [--json out.json] [--markdown table.md]

1. compile: every task's harness + baseline, and every library reference, on all CPU cores at once
   (one build per task and precision; a build runs its own nvcc jobs in parallel too). Prints the
   wall time and the summed build time, whose ratio is the parallelism reached.
2. --validate: every baseline against its CPU reference, every size and seed (GPU).
3. --time: every baseline timed at every size (50 calls, L2 flushed), then its library reference
   where one exists; per task: baseline ms and CV at the largest size, reference ms and the
   reference's speedup over the baseline (at the largest size, and P over all sizes).
4. --census: every baseline profiled with Nsight Compute at its largest size; Otsu thresholds over
   the library and each task's class (docs/bottleneck-census.md).

Without a GPU only the compile step runs. --json keeps every Evaluation; --markdown writes the
tables of docs/gpu-validation.md and docs/bottleneck-census.md.

--shard K/N takes every N-th task from the K-th (0-based), so N processes can validate side by side
on a many-core GPU host (give each its own KW_LOCK_DIR: validation needs correctness, not quiet;
never shard --time or --census, whose numbers need the GPU to themselves).
--census-from A.json B.json ... recomputes the Otsu thresholds and the classes over the census rows of
several earlier --json files (e.g. one per precision), without a GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker.engine import ncu  # noqa: E402
from worker.engine import toolchain as tc  # noqa: E402
from worker.engine.results import Evaluation  # noqa: E402
from worker.engine.taskspec import PRECISIONS
from worker.formats.cuda.build import build  # noqa: E402
from worker.formats.cuda.evaluation import EvalOptions, evaluate_baseline, evaluate_reference, validate  # noqa: E402
from worker.formats.cuda.spec import TaskSpec  # noqa: E402
from worker.registry import discover_tasks  # noqa: E402

TASKS = Path(__file__).resolve().parents[1] / "tasks"


def largest(ev: Evaluation):
    return max(ev.sizes, key=lambda s: s.complexity or 0) if ev.sizes else None


def compile_all(cases, chain, options, jobs: int) -> tuple[float, float, list[str]]:
    """Build everything in parallel; returns (wall s, summed build s, failures)."""
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"kw-library-{os.getpid()}"

    def one(spec: TaskSpec, precision: str, kind: str):
        started = time.monotonic()
        if kind == "reference":
            ev = evaluate_reference(spec, precision, options, compile_only=True, chain=chain,
                                    work_dir=work / f"{spec.name}-{precision}-ref")
            ok, why = ev.ok, ev.reason
        else:
            built = build(spec, precision, chain, None, work_dir=work / f"{spec.name}-{precision}",
                          cache_dir=options.build_cache)
            ok = built.ok
            why = "" if ok else (built.failure.log[-400:] if built.failure else "link failed")
        return f"{spec.name}[{precision}] {kind}", ok, why, time.monotonic() - started

    items = [(s, p, "baseline") for s, p in cases] + [(s, p, "reference") for s, p in cases
                                                        if s.reference_source(p) is not None]
    failures, summed = [], 0.0
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(one, *item) for item in items]
        for future in tqdm(as_completed(futures), total=len(futures), desc="compile", unit="build"):
            label, ok, why, seconds = future.result()
            summed += seconds
            if not ok:
                failures.append(f"{label}: {why}")
    return time.monotonic() - started, summed, failures


def ms(stats) -> str:
    return f"{stats.mean_ms:.4f}" if stats else "—"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", action="append", help="only these operators (repeatable)")
    parser.add_argument("--precision", choices=PRECISIONS)
    parser.add_argument("--validate", action="store_true")
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--census", action="store_true")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel builds")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--shard", help="K/N: only every N-th task, starting at the K-th (0-based)")
    parser.add_argument("--census-from", nargs="+", metavar="JSON", help="combine earlier --census results")
    args = parser.parse_args(argv)
    if args.census_from:
        return census_from(args.census_from)

    found = discover_tasks(TASKS, backends=("cuda",))
    if found.errors:
        print("invalid specs:\n" + "\n".join(map(str, found.errors)), file=sys.stderr)
        return 1
    specs = [s for s in found.specs if not args.task or s.name in args.task]
    precisions = [args.precision] if args.precision else list(PRECISIONS)
    cases = [(s, p) for s in specs for p in precisions if p in s.interfaces]
    if args.shard:
        try:
            k, n = (int(x) for x in args.shard.split("/"))
            if not 0 <= k < n:
                raise ValueError
        except ValueError:
            parser.error(f"--shard wants K/N with 0 <= K < N, got {args.shard!r}")
        cases = cases[k::n]
    chain = tc.detect()
    options = EvalOptions(iters=args.iters, use_baseline_cache=False)
    print(f"{len(specs)} operators, {len(cases)} tasks, "
          f"{sum(1 for s, p in cases if s.reference_source(p))} library references; GPU: "
          f"{chain.gpu.name if chain.gpu else 'none (' + chain.gpu_reason + ')'}; {args.jobs} build jobs", flush=True)

    wall, summed, failures = compile_all(cases, chain, options, args.jobs)
    print(f"compile: {wall:.1f} s wall, {summed:.1f} s of builds summed (x{summed / max(wall, 1e-9):.1f} "
          f"in parallel), {len(failures)} failed")
    for failure in failures:
        print(f"  FAILED {failure}")
    if chain.gpu is None:
        return 1 if failures else 0

    saved: dict[str, list] = {"validate": [], "baseline": [], "reference": [], "census": []}
    rows, census = [], []
    started = time.monotonic()
    if args.validate:
        bad = 0
        for spec, precision in tqdm(cases, desc="validate", unit="task"):
            ev = validate(spec, precision, options, chain=chain)
            saved["validate"].append(ev.to_dict())
            bad += not ev.ok
            if not ev.ok:
                tqdm.write(f"FAIL {spec.name}[{precision}]: {ev.reason}")
        print(f"validate: {len(cases) - bad} of {len(cases)} baselines match their CPU reference "
              f"({time.monotonic() - started:.0f} s)")
    if args.time:
        started = time.monotonic()
        for spec, precision in tqdm(cases, desc="time", unit="task"):
            base = evaluate_baseline(spec, precision, options, chain=chain)
            saved["baseline"].append(base.to_dict())
            has_ref = spec.reference_source(precision) is not None
            ref = evaluate_reference(spec, precision, options, chain=chain) if has_ref else None
            if ref is not None:
                saved["reference"].append(ref.to_dict())
            big = largest(base)
            ref_big = largest(ref) if ref is not None and ref.ok else None
            rows.append({
                "task": spec.name, "precision": precision, "verdict": str(base.verdict),
                "size": ", ".join(f"{k}={v:g}" for k, v in big.params.items()) if big else "",
                "baseline_ms": big.baseline.mean_ms if big and big.baseline else None,
                "cv": big.baseline.cv if big and big.baseline else None,
                "reference": spec.reference.name if ref is not None else "",
                "reference_verdict": str(ref.verdict) if ref is not None else "",
                "reference_ms": ref_big.candidate.mean_ms if ref_big and ref_big.candidate else None,
                "reference_speedup": ref_big.speedup if ref_big else None,
                "reference_P": ref.score if ref is not None and ref.ok else None,
                "reference_reason": ref.reason if ref is not None and not ref.ok else "",
            })
        print(f"time: {time.monotonic() - started:.0f} s for {len(cases)} baselines and "
              f"{len(saved['reference'])} references")
        print("\n| task | prec | largest size | baseline ms | CV | reference | ref ms | ref speedup | ref P |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            def f(v, fmt):
                return format(v, fmt) if isinstance(v, int | float) else "—"
            ref = r["reference"] + (f" ({r['reference_verdict']}: {r['reference_reason'][:60]})"
                                    if r["reference_reason"] else "")
            print(f"| {r['task']} | {r['precision']} | {r['size']} | {f(r['baseline_ms'], '.4f')} | "
                  f"{f(r['cv'] and r['cv'] * 100, '.2f')}% | {ref or '—'} | {f(r['reference_ms'], '.4f')} | "
                  f"{f(r['reference_speedup'], '.2f')} | {f(r['reference_P'], '.2f')} |")
    if args.census:
        started = time.monotonic()
        samples, labels = [], []
        for spec, precision in tqdm(cases, desc="census", unit="task"):
            one = dataclasses.replace(spec, sizes=(max(spec.sizes, key=spec.complexity_of),))
            ev = evaluate_baseline(one, precision, dataclasses.replace(options, profile="filtered", iters=5),
                                   chain=chain)
            saved["census"].append(ev.to_dict())
            profile = ncu.dominant(ev.profiles)
            sol = profile.full_metrics.get(ncu.SOL, {}) if profile else {}
            try:
                triple = tuple(float(sol[n]["value"]) for n in (ncu.COMPUTE_TH[1], ncu.DRAM_TH[1], ncu.MEMORY_TH[1]))
            except (KeyError, TypeError, ValueError):
                tqdm.write(f"no profile for {spec.name}[{precision}]: {ev.reason} {' '.join(ev.notes)}")
                continue
            samples.append(triple)
            labels.append((spec.name, precision, spec.category))
        print(f"census: {len(samples)} kernels profiled in {time.monotonic() - started:.0f} s")
        census = print_census([{"task": name, "precision": precision, "category": category,
                                "compute": c, "dram": d, "memory": m}
                               for (name, precision, category), (c, d, m) in zip(labels, samples, strict=True)])
    if args.json:
        data = {**saved, "rows": rows, "census_rows": census}
        Path(args.json).write_text(json.dumps(data, indent=1), encoding="utf-8")
    return 1 if failures else 0


def print_census(rows: list[dict]) -> list[dict]:
    """Otsu thresholds over the rows' (compute, DRAM, memory) throughputs; each row gets its class."""
    result = ncu.otsu_thresholds([(r["compute"], r["dram"], r["memory"]) for r in rows])
    t = result.thresholds
    print(f"Otsu thresholds over {len(rows)} kernels: compute {t.compute:.2f}%  dram {t.dram:.2f}%  "
          f"memory {t.memory:.2f}%  (defaults: {ncu.Thresholds()})")
    print("class distribution: " + ", ".join(f"{k}={v}" for k, v in result.distribution.items()))
    print("\n| task | prec | category | compute % | DRAM % | memory % | class | class (default thresholds) |")
    print("|---|---|---|---|---|---|---|---|")
    out = []
    for r in rows:
        c, d, m = r["compute"], r["dram"], r["memory"]
        out.append({**r, "class": str(ncu.classify_values(c, d, m, t)),
                    "default_class": str(ncu.classify_values(c, d, m))})
        print(f"| {r['task']} | {r['precision']} | {r['category']} | {c:.2f} | {d:.2f} | {m:.2f} | "
              f"{out[-1]['class']} | {out[-1]['default_class']} |")
    return out


def census_from(paths: list[str]) -> int:
    rows = []
    for path in paths:
        try:
            rows += json.loads(Path(path).read_text(encoding="utf-8")).get("census_rows", [])
        except (OSError, ValueError, AttributeError) as exc:
            print(f"cannot read census rows from {path}: {exc}", file=sys.stderr)
            return 1
    if not rows:
        print(f"no census rows in {', '.join(paths)}: run with --census --json first", file=sys.stderr)
        return 1
    print_census(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
