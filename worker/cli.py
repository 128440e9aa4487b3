"""`python -m worker ...`: evaluate candidates and check the task library from a shell.

Exit codes: 0 success, 1 the candidate (or a task) failed, 2 usage error, 3 a GPU is needed and absent.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

from worker.agents.trajectory import run_optimize
from worker.engine import ncu
from worker.engine import toolchain as tc
from worker.engine.context import HARNESS_DIR, REPO_ROOT, EvalOptions
from worker.engine.results import Evaluation, Verdict
from worker.engine.taskspec import PRECISIONS
from worker.engine.timing import BATCH_BELOW_MS, ITERS, WARMUP
from worker.registry import AnySpec, discover_tasks, evaluate, evaluate_baseline, format_of, validate

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_GPU = 0, 1, 2, 3
TASKS_ROOT = REPO_ROOT / "tasks"


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def find_task(name: str, root: Path) -> AnySpec:
    found = discover_tasks(root)
    matches = [s for s in found.specs if name in (s.name, f"{s.suite}/{s.name}")]
    if not matches:
        bad = [str(e) for e in found.errors if f"/{name}/" in e.path]
        hint = f" (its spec is invalid: {bad[0]})" if bad else ""
        raise SystemExit(_usage(f"no task named {name!r} under {root}{hint}"))
    if len(matches) > 1:
        raise SystemExit(
            _usage(f"{name!r} is ambiguous: " + ", ".join(f"{s.suite}/{s.name}" for s in matches))
        )
    return matches[0]


def _usage(message: str) -> int:
    _err(f"error: {message}")
    return EXIT_USAGE


def format_table(ev: Evaluation) -> str:
    """Per-size table, then P, the geomean and the review flags."""
    head = ("size", "T", "base ms", "cand ms", "speedup", "CV base", "CV cand", "correct")
    rows = [head]
    for s in ev.sizes:
        b, c = s.baseline, s.candidate
        rows.append(
            (
                s.label,
                f"{s.complexity:.3g}",
                f"{b.mean_ms:.4f}" if b else "-",
                f"{c.mean_ms:.4f}" if c else "-",
                f"{s.speedup:.3f}x" if s.speedup is not None else "-",
                f"{b.cv:.1%}" if b else "-",
                f"{c.cv:.1%}" if c else "-",
                {True: "yes", False: "NO", None: "-"}[s.correct],
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    out = [f"{ev.task} [{ev.precision}] {ev.kind}: {ev.verdict.upper()}  {ev.reason}"]
    if ev.sizes:
        out += lines
    if ev.score is not None:
        out.append(
            f"P (complexity-weighted speedup) = {ev.score:.3f}   geomean speedup = {ev.geomean_speedup:.3f}"
        )
    for flag in ev.flags:
        out.append(f"FLAG {flag}")
    for note in ev.notes:
        out.append(f"note: {note}")
    for v in ev.static_violations:
        out.append(v)
    if ev.compile is not None:
        out.append(f"compile: {ev.compile.command}" + ("  (cached)" if ev.compile.cached else ""))
        for r in ev.compile.resources:
            out.append(
                f"  {r.kernel}: {r.registers} regs, {r.shared_bytes} B smem, {r.stack_bytes} B stack, "
                f"spills {r.spill_stores}/{r.spill_loads} B"
            )
        if not ev.compile.ok:
            out.append(ev.compile.log.rstrip())
    if ev.crash is not None and ev.crash.stderr_tail.strip():
        out.append("stderr (tail):\n" + ev.crash.stderr_tail.rstrip()[-2000:])
    if ev.memcheck_log:
        out.append("memcheck:\n" + ev.memcheck_log.rstrip()[-4000:])
    for p in ev.profiles:
        metrics = ", ".join(f"{k}={v['value']}{v.get('unit', '')}" for k, v in p.metrics.items())
        out.append(f"profile size {p.size_index} {p.kernel}: {p.bottleneck}  {metrics}")
    return "\n".join(out)


def _options(args: argparse.Namespace) -> EvalOptions:
    return EvalOptions(
        seeds=getattr(args, "seeds", 3),
        iters=getattr(args, "iters", ITERS),
        warmup=getattr(args, "warmup", WARMUP),
        profile=getattr(args, "profile", "none"),
        use_baseline_cache=not getattr(args, "no_baseline_cache", False),
        interleave=getattr(args, "interleave", False),
        batch_below_ms=getattr(args, "batch_below_ms", BATCH_BELOW_MS),
        queued_timing=getattr(args, "queued_timing", False),
        harness_dir=args.harness_dir,
        torch_compile=getattr(args, "torch_compile", False),
    )


def _work_dir(args: argparse.Namespace) -> str | None:
    """A kept scratch folder when --keep is given (the evaluation then leaves it in place)."""
    if not getattr(args, "keep", False):
        return None
    work = tempfile.mkdtemp(prefix="kw-eval-")
    _err(f"scratch folder (kept): {work}")
    return work


def _exit_code(ev: Evaluation) -> int:
    if ev.verdict == Verdict.NO_GPU:
        return EXIT_NO_GPU
    return EXIT_OK if ev.verdict == Verdict.OK else EXIT_FAILED


def cmd_eval(args: argparse.Namespace) -> int:
    spec = find_task(args.task, Path(args.tasks_root))
    if args.precision not in spec.precisions:
        return _usage(f"{spec.name} has no {args.precision} variant (it has {', '.join(spec.precisions)})")
    try:
        source = Path(args.candidate).read_text(encoding="utf-8")
    except OSError as exc:
        return _usage(f"cannot read the candidate: {exc}")
    chain = tc.detect()
    if chain.gpu is None and not args.compile_only:
        _err(f"note: no GPU here ({chain.gpu_reason}); the run will stop after compiling (verdict no_gpu)")
    ev = evaluate(
        spec,
        args.precision,
        source,
        args.flags,
        _options(args),
        compile_only=args.compile_only,
        chain=chain,
        work_dir=_work_dir(args),
        progress=_err,
    )
    return _report(ev, args)


def cmd_baseline(args: argparse.Namespace) -> int:
    spec = find_task(args.task, Path(args.tasks_root))
    ev = evaluate_baseline(spec, args.precision, _options(args), work_dir=_work_dir(args), progress=_err)
    return _report(ev, args)


def cmd_reference(args: argparse.Namespace) -> int:
    spec = find_task(args.task, Path(args.tasks_root))
    evaluate_reference = format_of(spec).evaluate_reference
    if evaluate_reference is None:
        return _usage(f"{spec.name} is a {spec.backend} task: its expert reference is timed with every evaluation")
    if spec.reference is None:
        return _usage(f"{spec.name} has no library reference (add reference.toml beside its spec.toml)")
    _err(f"reference: {spec.reference.name} (links {', '.join(spec.reference.libraries) or 'no library'})")
    ev = evaluate_reference(spec, args.precision, _options(args), compile_only=args.compile_only,
                            work_dir=_work_dir(args), progress=_err)
    return _report(ev, args)


def _report(ev: Evaluation, args: argparse.Namespace) -> int:
    print(format_table(ev))
    if args.json:
        Path(args.json).write_text(ev.to_json(indent=1), encoding="utf-8")
        _err(f"wrote {args.json}")
    return _exit_code(ev)


def _selected(args: argparse.Namespace) -> list[tuple[AnySpec, str]]:
    found = discover_tasks(Path(args.tasks_root))
    specs = [find_task(args.task, Path(args.tasks_root))] if args.task else list(found.specs)
    precisions = [args.precision] if args.precision else list(PRECISIONS)
    return [(s, p) for s in specs for p in precisions if p in s.precisions]


def cmd_validate_tasks(args: argparse.Namespace) -> int:
    chain = tc.detect()
    if chain.gpu is None:
        _err(f"validate-tasks runs every baseline on the GPU, and there is none here ({chain.gpu_reason})")
        return EXIT_NO_GPU
    failures = 0
    evaluations = []
    for spec, precision in _selected(args):
        ev = validate(spec, precision, _options(args), chain=chain, progress=_err)
        evaluations.append(ev.to_dict())
        failures += not ev.ok
        print(
            f"{'PASS' if ev.ok else 'FAIL'}  {spec.suite}/{spec.name} [{precision}]  {ev.reason}", flush=True
        )
    if args.json:
        Path(args.json).write_text(json.dumps(evaluations, indent=1), encoding="utf-8")
    print(f"{len(evaluations) - failures} of {len(evaluations)} baselines validated (C/CUDA: against the CPU "
          "reference; KernelBench: the Model runs, finite and deterministic; task.yaml: the original passes its "
          "harness)")
    return EXIT_FAILED if failures else EXIT_OK


def cmd_check_specs(args: argparse.Namespace) -> int:
    found = discover_tasks(Path(args.tasks_root))
    for spec in found.specs:
        print(f"ok    {spec.suite}/{spec.name}  [{spec.backend}] ({', '.join(spec.precisions)}; "
              f"{len(spec.sizes)} sizes)")
    for error in found.errors:
        print(f"ERROR {error}")
    print(f"{len(found.specs)} valid, {len(found.errors)} invalid spec(s) under {args.tasks_root}")
    return EXIT_FAILED if found.errors else EXIT_OK


def _throughputs(p: dict) -> tuple[float, float, float] | None:
    sol = p.get("full_metrics", {}).get(ncu.SOL, {})
    try:
        return tuple(
            float(sol[name]["value"]) for name in (ncu.COMPUTE_TH[1], ncu.DRAM_TH[1], ncu.MEMORY_TH[1])
        )
    except (KeyError, TypeError, ValueError):
        return None


def cmd_thresholds(args: argparse.Namespace) -> int:
    """Otsu's method over the dominant kernel of every baseline at its largest size (paper Appendix A)."""
    samples: list[tuple[float, float, float]] = []
    labels: list[str] = []
    if args.from_json:
        for path in args.from_json:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            for ev in data if isinstance(data, list) else [data]:
                profile = ncu.dominant(Evaluation.from_dict(ev).profiles)
                triple = _throughputs(profile.to_dict()) if profile else None
                if triple:
                    samples.append(triple)
                    labels.append(f"{ev['task']}[{ev['precision']}]")
    else:
        chain = tc.detect()
        if chain.gpu is None:
            _err(
                f"profiling the baselines needs a GPU, and there is none here ({chain.gpu_reason}); "
                "pass --from-json with saved baseline evaluations instead"
            )
            return EXIT_NO_GPU
        saved = []
        for spec, precision in _selected(args):
            if not format_of(spec).library_census:
                continue  # the census covers the C/CUDA library, as the paper's Appendix A does
            largest = max(spec.sizes, key=spec.complexity_of)
            one_size = dataclasses.replace(spec, sizes=(largest,))
            ev = evaluate_baseline(
                one_size,
                precision,
                dataclasses.replace(_options(args), profile="filtered", iters=5),
                chain=chain,
                progress=_err,
            )
            saved.append(ev.to_dict())
            profile = ncu.dominant(ev.profiles)
            triple = _throughputs(profile.to_dict()) if profile else None
            if triple:
                samples.append(triple)
                labels.append(f"{spec.name}[{precision}]")
            else:
                _err(f"no profile for {spec.name}[{precision}]: {ev.reason} {' '.join(ev.notes)}")
        if args.json:
            Path(args.json).write_text(json.dumps(saved, indent=1), encoding="utf-8")
    if len(samples) < 2:
        _err("need at least two baseline profiles to calibrate")
        return EXIT_FAILED
    result = ncu.otsu_thresholds(samples)
    for label, (c, d, m) in zip(labels, samples, strict=True):
        print(
            f"{label:40s} compute {c:6.2f}%  dram {d:6.2f}%  memory {m:6.2f}%  "
            f"-> {ncu.classify_values(c, d, m, result.thresholds)}"
        )
    t = result.thresholds
    print(
        f"Otsu thresholds over {result.samples} kernels: compute {t.compute:.2f}%  dram {t.dram:.2f}%  "
        f"memory {t.memory:.2f}%"
    )
    print("class distribution: " + ", ".join(f"{k}={v}" for k, v in result.distribution.items()))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m worker", description=__doc__)
    parser.add_argument("--tasks-root", default=str(TASKS_ROOT),
                        help="folder holding <suite>/<op>/spec.toml (or task.yaml)")
    parser.add_argument("--harness-dir", default=str(HARNESS_DIR), help="folder of the shared kw_harness.cuh")
    sub = parser.add_subparsers(dest="command", required=True)

    def timing_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--seeds", type=int, default=3)
        p.add_argument("--iters", type=int, default=ITERS)
        p.add_argument("--warmup", type=int, default=WARMUP)
        p.add_argument("--profile", choices=ncu.PROFILE_MODES, default="none")
        p.add_argument("--no-baseline-cache", action="store_true", help="time the baseline again")
        p.add_argument("--batch-below-ms", type=float, default=BATCH_BELOW_MS, metavar="MS",
                       help="C/CUDA: time sizes whose baseline call is shorter than MS in batches of launches, the "
                            f"same for the baseline and the candidate (docs/evaluation.md); default {BATCH_BELOW_MS}, "
                            "0: every call timed alone")
        p.add_argument("--queued-timing", action="store_true",
                       help="C/CUDA: queue each sample's calls behind a spacer kernel instead of synchronizing the "
                            "device after every call, where stream 0 orders all of the candidate's work; a task "
                            "whose baseline call waits for the device more than once is then timed as --interleave "
                            "does (docs/evaluation.md, \"Timing protocol\")")
        p.add_argument("--interleave", action="store_true",
                       help="C/CUDA: time the candidate and its baseline at once, taking turns on the GPU and on "
                            "one CPU, and divide by that baseline (not the cached one); docs/evaluation.md")
        p.add_argument("--torch-compile", action="store_true",
                       help="KernelBench tasks: also time torch.compile(Model) as the expert reference")
        p.add_argument("--keep", action="store_true", help="keep the scratch folder (printed on stderr)")
        p.add_argument("--json", help="write the full Evaluation as JSON here")

    p = sub.add_parser("eval", help="evaluate a candidate against a task's baseline")
    p.add_argument("--task", required=True)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    p.add_argument("--candidate", required=True, help="the .cu file defining <entry>_optimized (KernelBench: the "
                   ".py file defining ModelNew; task.yaml: the solution file)")
    p.add_argument("--flags", help="proposed nvcc command or flags (whitelisted)")
    p.add_argument("--compile-only", action="store_true", help="build only; works without a GPU")
    timing_args(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("baseline", help="time (and profile) a task's baseline alone")
    p.add_argument("--task", required=True)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    timing_args(p)
    p.set_defaults(func=cmd_baseline)

    p = sub.add_parser("reference", help="check and time a task's library reference (cuBLAS, cuSPARSE, CUB)")
    p.add_argument("--task", required=True)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    p.add_argument("--compile-only", action="store_true", help="build only; works without a GPU")
    timing_args(p)
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("validate-tasks", help="check every task's baseline on the GPU (C/CUDA: against its CPU "
                       "reference)")
    p.add_argument("--task")
    p.add_argument("--precision", choices=PRECISIONS)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--json")
    p.set_defaults(func=cmd_validate_tasks)

    p = sub.add_parser("check-specs", help="validate every spec.toml and task.yaml")
    p.set_defaults(func=cmd_check_specs)

    p = sub.add_parser("thresholds", help="Otsu thresholds over the baseline profiles of the library")
    p.add_argument("--task")
    p.add_argument("--precision", choices=PRECISIONS)
    p.add_argument(
        "--from-json", nargs="+", help="saved baseline Evaluations (from --json) instead of profiling"
    )
    p.add_argument("--json", help="save the baseline Evaluations profiled here")
    p.set_defaults(func=cmd_thresholds)
    p = sub.add_parser("optimize", help="run the agent pipeline headless and write the trajectory")
    p.add_argument("--task", required=True)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    p.add_argument("--llm", required=True, help="an OpenAI-compatible base URL, or a script .json to serve")
    p.add_argument("--model", default="scripted")
    p.add_argument("--api-key", default="", help="default: none (scripted servers need no key)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--debug-rounds", type=int, default=3)
    p.add_argument("--profile", choices=ncu.PROFILE_MODES, default="filtered")
    p.add_argument("--queued-timing", action="store_true",
                   help="time every turn queued, the kernel's own time, instead of synchronized, and beside its "
                        "baseline where the baseline's call waits for the device more than once (docs/evaluation.md, "
                        "\"Timing protocol\"); the trajectory records it as timing_protocol")
    p.add_argument("--temperature", type=float, default=0.2)
    p.add_argument("--no-compiler-agent", action="store_true", help="default flags instead of the agent's")
    p.add_argument("--iters", type=int, default=ITERS)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--prices", help="JSON price table overriding the defaults (USD per 1M tokens)")
    p.add_argument("--out", required=True, help="trajectory JSON to write")
    p.set_defaults(func=run_optimize)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
