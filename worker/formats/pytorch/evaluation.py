"""Evaluating a KernelBench candidate (docs/architecture.md, Security model):

    static checks -> build (imports the candidate: load_inline compiles; no GPU lock, GPU hidden)
    -> check (trials x seeds, poisoned allocator, inputs unchanged) under the GPU lock
    -> time eager Model (cached), ModelNew and optionally torch.compile(Model) -> score -> flags

The entry points take the same arguments as every format's and return an `Evaluation`;
nothing here raises for a bad candidate.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from worker.engine.entry import Steps, entry_points
from worker.engine.harness import phase_name
from worker.engine.results import CompileResult, CrashInfo, Evaluation, SizeResult, TimingStats, Verdict, first_of
from worker.engine.scoring import score_sizes, steady
from worker.engine.timing import TimingCache, beyond_wall_time, file_digest, timing_of
from worker.formats.pytorch.runner import (
    HARNESS,
    NO_DEVICE_TEXT,
    PROFILE_NOTE,
    STREAM_GAP_REVIEW,
    TIMED,
    ChildRun,
    TorchContext,
    candidate_build_key,
    extension_cache_root,
    missing_gpu,
    precheck,
    torch_version,
)
from worker.formats.pytorch.static_checks import check_candidate

# ---------------------------------------------------------------- public entry points

# ---------------------------------------------------------------- the steps


def _evaluate(ctx: TorchContext, source: str, flags: str | None, compile_only: bool) -> Evaluation:
    spec, precision, o = ctx.spec, ctx.precision, ctx.options
    notes: list[str] = []
    if flags and flags.strip():
        notes.append("compiler flags are ignored for pytorch tasks: a candidate passes its own through "
                     "load_inline(extra_cflags=..., extra_cuda_cflags=...)")
    report = check_candidate(source, spec)
    if not report.ok:
        msgs = report.messages()
        return ctx.base(verdict=Verdict.REJECTED, static_violations=msgs, notes=tuple(notes),
                        reason=first_of(msgs))

    ctx.candidate_path = ctx.work / "candidate.py"
    ctx.candidate_path.write_text(source, encoding="utf-8")
    ctx.extensions_dir = extension_cache_root(o) / candidate_build_key(source, ctx.device, ctx.arch_list)
    ctx.extensions_dir.mkdir(parents=True, exist_ok=True)
    built = _build(ctx, notes)
    if isinstance(built, Evaluation):
        no_gpu = missing_gpu(ctx)
        if no_gpu and not compile_only:
            # Without a GPU the worker may hold a CPU-only PyTorch that cannot build CUDA extensions at all:
            # the missing GPU is the reason to report, not the candidate.
            return replace(built, verdict=Verdict.NO_GPU, reason=f"{no_gpu} (the build failed here too: "
                           f"{built.reason.removeprefix('candidate failed to compile: ')})")
        return built
    if compile_only:
        where = "" if ctx.chain.gpu or ctx.device != "cuda" else f"; no GPU is present ({ctx.chain.gpu_reason})"
        return ctx.base(verdict=Verdict.OK, kind="compile_only", compile=built, notes=tuple(notes),
                        reason=f"built and imported{where}, nothing was run")
    no_gpu = missing_gpu(ctx)
    if no_gpu:
        return ctx.base(verdict=Verdict.NO_GPU, reason=no_gpu, compile=built, notes=tuple(notes))

    ctx.progress(f"{spec.name}/{precision}: check ModelNew against Model ({o.torch_trials} seeded trials)")
    with ctx.phase("check"):
        pair = ctx.compared(o.check_timeout_s)
    side = pair.failed_side  # whose failure to report when the Model's process did not decide
    if side == "candidate":
        return _crashed(ctx, pair.candidate, compile=built, notes=notes)
    if side == "evidence":
        message = pair.reference.crash.message if pair.reference.crash else ""
        return ctx.base(verdict=Verdict.INCORRECT, compile=built, notes=tuple(notes), sizes=(ctx.size(correct=False),),
                        reason=f"ModelNew's process ended without sending what the check needs: {message} (the "
                               "Model's process decides from what ModelNew's process sends after each trial; a short "
                               "or malformed stream is refused)")
    if side is not None:
        crashed = _crashed(ctx, pair.reference, compile=built, notes=notes)
        return crashed if side == "timeout" else replace(
            crashed, verdict=Verdict.RUNTIME_ERROR,
            reason=f"the Model's side of the check failed (a task problem, not the candidate's): {crashed.reason}")
    checked = _checked_size(ctx, pair.reference.data or {})
    if not checked.correct:
        return ctx.base(verdict=Verdict.INCORRECT, reason=_mismatch_reason(ctx, checked), sizes=(checked,),
                        compile=built, notes=tuple(notes))

    baseline, cached = _times(ctx, "model")
    if isinstance(baseline, Evaluation):
        return replace(baseline, kind="candidate", compile=built, notes=tuple(notes) + baseline.notes)
    ctx.progress(f"{spec.name}/{precision}: time ModelNew ({o.warmup} warm-up + {o.iters} timed calls)")
    run = ctx.timed("time", "ModelNew", lambda: ctx.child("time", o.time_timeout_s),
                    failed=lambda r: not r.ok or bool(_timed_call_failure(ctx, r.data or {})
                                                      or beyond_wall_time(r.data or {}, r.result.wall_s)))
    if not run.ok:
        return _crashed(ctx, run, compile=built, notes=notes, sizes=(checked,))
    data = run.data or {}
    failed = _timed_call_failure(ctx, data) or beyond_wall_time(data, run.result.wall_s) or None
    if failed is not None:
        return ctx.base(verdict=Verdict.INCORRECT, reason=failed, sizes=(replace(checked, correct=False),),
                        compile=built, notes=tuple(notes))
    candidate = timing_of(data)
    if candidate is None:
        return _crashed(ctx, replace(run, crash=CrashInfo("missing_output", "no timing in the result", size_index=0)),
                        compile=built, notes=notes, sizes=(checked,))
    reference = _reference_times(ctx, notes)

    size_flags: list[str] = []
    gap = data.get("stream_gap")
    if isinstance(gap, (int, float)) and gap > STREAM_GAP_REVIEW:
        size_flags.append(f"work outside the current stream: timed with a device-wide synchronize "
                          f"(synchronized time is {gap:.1f}x the current stream's)")
    scored = score_sizes([replace(checked, baseline=baseline, candidate=candidate, reference=reference,
                                  flags=tuple(size_flags))])
    flags = tuple(dict.fromkeys([*size_flags, *scored.flags]))  # score_sizes reports only the flags it adds
    return ctx.base(
        verdict=Verdict.OK,
        reason=f"correct on {o.torch_trials} seeded trials",
        sizes=scored.sizes,
        score=scored.score,
        geomean_speedup=scored.geomean,
        expert_speedup=scored.expert,
        flags=flags,
        notes=tuple(notes) + ((PROFILE_NOTE,) if o.profile != "none" else ()),
        compile=built,
        baseline_cached=cached,
    )


def _build(ctx: TorchContext, notes: list[str]) -> CompileResult | Evaluation:
    """Import the candidate in a child (load_inline compiles), with the GPU hidden and no GPU lock."""
    o = ctx.options
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: build the candidate's extension (torch {torch_version()})")
    with ctx.phase("compile"):
        run = ctx.child("build", o.compile_timeout_s, lock=False, hide_gpu=ctx.device == "cuda")
    res, data = run.result, run.data or {}
    command = "torch.utils.cpp_extension.load_inline"
    output = res.output.strip()
    if res.timed_out:
        log = output + f"\n[the build was stopped after {o.compile_timeout_s:.0f} s]"
        failure = CompileResult("candidate", False, command, log, seconds=res.wall_s)
        return ctx.base(verdict=Verdict.COMPILE_ERROR, compile=failure, notes=tuple(notes),
                        reason=f"the candidate did not finish building within {o.compile_timeout_s:.0f} s")
    if "ok" in data and res.returncode == 0:
        if data["ok"]:
            return CompileResult("candidate", True, command, output, seconds=res.wall_s)
        error = str(data.get("error") or "")
        log = "\n\n".join(x for x in (error[-128 * 1024 :], output, data.get("traceback", "")) if x)
        failure = CompileResult("candidate", False, command, log, seconds=res.wall_s)
        if data.get("kind") == "compile_error":
            return ctx.base(verdict=Verdict.COMPILE_ERROR, compile=failure, notes=tuple(notes),
                            reason="candidate failed to compile: " + _first_error(error + "\n" + output))
        if ctx.device == "cuda" and any(t in error.lower() for t in NO_DEVICE_TEXT):
            notes.append("the candidate uses the GPU at import time; it was imported again under the GPU lock")
            return CompileResult("candidate", True, command, log, seconds=res.wall_s)
        return ctx.base(verdict=Verdict.COMPILE_ERROR, compile=failure, notes=tuple(notes),
                        reason=f"the candidate module failed to import: {error.splitlines()[0] if error else '?'}")
    crash = run.crash or CrashInfo("missing_output", "the build reported nothing")
    failure = CompileResult("candidate", False, command, output, seconds=res.wall_s)
    return ctx.base(verdict=Verdict.RUNTIME_ERROR, compile=failure, crash=crash, notes=tuple(notes),
                    reason=f"{crash.kind} while importing the candidate: {crash.message}")


def _timed_call_failure(ctx: TorchContext, data: dict[str, Any]) -> str | None:
    """Why the candidate fails when a timed call was wrong (every timed call runs on fresh inputs and is
    compared with the Model on them, torch_timed.py), or when its timing comes without those checks."""
    if data.get("failed_call") is None:
        return None if data.get("checked_calls") else "the timed calls were not checked (the harness reported no check)"
    tol = ctx.spec.tolerance(ctx.precision)
    what = _output_mismatch({**(data.get("first_mismatch") or {}), "atol": tol.atol, "rtol": tol.rtol})
    return (
        f"timed call {data['failed_call']} (of {ctx.options.iters}) gave a wrong result although the checks before "
        f"timing passed: {what} (each timed call gets fresh inputs and is compared with the Model on them; doing "
        "less work, or remembering earlier results, while timed is caught here)"
    )


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if re.search(r"\berror\b", line, re.IGNORECASE) and "Error building extension" not in line:
            return line.strip()[:500]
    return next((ln.strip()[:500] for ln in text.splitlines() if ln.strip()), "")


def _checked_size(ctx: TorchContext, data: dict[str, Any]) -> SizeResult:
    mismatch = data.get("first_mismatch")
    if isinstance(mismatch, dict):
        tol = ctx.spec.tolerance(ctx.precision)
        mismatch = {**mismatch, "atol": tol.atol, "rtol": tol.rtol}
    return ctx.size(
        correct=bool(data.get("correct")),
        inputs_unchanged=data.get("inputs_unchanged"),
        first_mismatch=mismatch,
        changed_input=data.get("changed_input"),
    )


def _mismatch_reason(ctx: TorchContext, size: SizeResult) -> str:
    m = size.first_mismatch or {}
    where = f"trial {m.get('trial')} (seed {m.get('seed')})" if "trial" in m else "the check"
    if size.inputs_unchanged is False:
        return f"at {where} the candidate modified its inputs: {size.changed_input}"
    return f"at {where}: {_output_mismatch(m)}"


def _output_mismatch(m: dict[str, Any]) -> str:
    """'output[3, 1] expected 1 got nan; 5 of 256 elements out of tolerance (atol=..., rtol=...)', or the
    output's shape/dtype/type error."""
    if "index" not in m:
        return f"{m.get('output', 'output')} {m.get('error') or 'is out of tolerance'}"
    position = "[" + ", ".join(str(p) for p in m.get("position", [m.get("index")])) + "]"
    return (
        f"{m.get('output')}{position} expected {_g(m.get('expected'))} got {_g(m.get('got'))}; "
        f"{m.get('mismatches')} of {m.get('total')} elements out of tolerance "
        f"(atol={m.get('atol')}, rtol={m.get('rtol')})"
    )


def _g(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _crashed(
    ctx: TorchContext,
    run: ChildRun,
    *,
    compile: CompileResult | None = None,
    notes: list[str] | tuple[str, ...] = (),
    sizes: tuple[SizeResult, ...] | None = None,
    kind: str = "candidate",
    who: str = "",
) -> Evaluation:
    crash = run.crash or CrashInfo("missing_output", "no result JSON", size_index=0)
    memcheck = ""
    python_level = crash.kind in ("python_exception", "timeout", "missing_output", "nonzero_exit", "not_started",
                                  "out_of_memory")
    if kind == "candidate" and ctx.device == "cuda" and not python_level:
        memcheck = _memcheck(ctx)
    verdict = Verdict.TIMEOUT if crash.kind == "timeout" else Verdict.RUNTIME_ERROR
    return ctx.base(
        verdict=verdict,
        kind=kind,
        reason=f"{who}{crash.kind} during {phase_name(run.mode)}: {crash.message}",
        crash=crash,
        memcheck_log=memcheck,
        sizes=sizes if sizes is not None else (ctx.size(),),
        compile=compile,
        notes=tuple(notes),
    )


def _memcheck(ctx: TorchContext) -> str:
    """compute-sanitizer memcheck over one check trial: where a device fault happened, for the Debug agent."""
    if not ctx.chain.sanitizer:
        return "compute-sanitizer not found; no memcheck log"
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: compute-sanitizer memcheck of one check trial")
    prefix = [ctx.chain.sanitizer, "--tool", "memcheck", "--print-limit", "30", "--error-exitcode", "86"]
    with ctx.phase("memcheck"):
        run = ctx.child("check", ctx.options.memcheck_timeout_s, name="memcheck", prefix=prefix, trials=1)
    log = run.result.output
    if run.result.timed_out:
        log += f"\n[memcheck stopped after {ctx.options.memcheck_timeout_s:.0f} s]"
    return log[-64 * 1024 :]


# ---------------------------------------------------------------- timing of Model and torch.compile (cached)


def timing_cache(ctx: TorchContext, impl: str) -> TimingCache:
    """The eager Model's (impl='model') or torch.compile's (impl='compile') cached times: keyed by the task,
    precision, device, GPU model, torch, the model file, the harness and the timing protocol."""
    o = ctx.options
    parts = {
        "backend": "pytorch",
        "task": ctx.spec.name,
        "precision": ctx.precision,
        "impl": impl,
        "device": ctx.device,
        "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "",
        "torch": torch_version(),
        "model": file_digest(ctx.spec.model_path),
        "harness": file_digest(HARNESS),
        "timed": file_digest(TIMED),
        "warmup": o.warmup,
        "warmup_ms": o.warmup_ms,
        "iters": o.iters,
        "seed_base": o.seed_base,
    }
    return TimingCache(o, f"{ctx.spec.name}-{ctx.precision}-{impl}", parts)


def _times(ctx: TorchContext, impl: str) -> tuple[TimingStats | Evaluation, bool]:
    """The eager Model's (impl='model') or torch.compile's (impl='compile') timing, from the cache when it
    was measured for this task, precision, GPU model, torch, model file and harness."""
    o = ctx.options
    cache = timing_cache(ctx, impl)
    what = "torch.compile(Model)" if impl == "compile" else "the eager Model"
    cached = cache.load(lambda data: _steady_or_none(TimingStats.from_dict(data["timing"]), o.cache_max_cv))
    if cached is not None:
        ctx.progress(f"{ctx.spec.name}/{ctx.precision}: {what} times from cache")
        return cached, True
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: time {what} ({o.warmup} warm-up + {o.iters} timed calls)")
    run = ctx.timed("time_reference" if impl == "compile" else "time_baseline", what,
                    lambda: ctx.child("time", o.time_timeout_s, impl=impl))
    stats = timing_of(run.data or {}) if run.ok else None
    if stats is None:
        who = f"{what} failed while timing (a task problem, not the candidate's): "
        return _crashed(ctx, run, kind="baseline", who=who), False
    # Never cache times the GPU's slowdown spoiled, nor noisy ones: the next evaluation measures them again.
    if what in ctx.slowed or not steady([stats], o.cache_max_cv):
        return stats, False
    cache.store({"task": ctx.spec.name, "precision": ctx.precision, "impl": impl,
                 "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "", "env": run.data.get("env", {}),
                 "timing": stats.to_dict()})
    return stats, False


def _steady_or_none(stats: TimingStats, max_cv: float) -> TimingStats | None:
    """A cached time, unless it is noisy (kept by a version that cached noisy times): then it is measured again."""
    return stats if steady([stats], max_cv) else None


def _reference_times(ctx: TorchContext, notes: list[str]) -> TimingStats | None:
    """torch.compile(Model) as the expert reference, where the options or the task ask for it; a failure is a
    note, never a verdict."""
    if not (ctx.options.torch_compile or ctx.spec.compare_compile):
        return None
    stats, _ = _times(ctx, "compile")
    if isinstance(stats, Evaluation):
        notes.append(f"no torch.compile reference: {stats.reason}")
        return None
    return stats


def _evaluate_baseline(ctx: TorchContext) -> Evaluation:
    no_gpu = missing_gpu(ctx)
    if no_gpu:
        return ctx.base(verdict=Verdict.NO_GPU, kind="baseline", reason=no_gpu)
    baseline, cached = _times(ctx, "model")
    if isinstance(baseline, Evaluation):
        return baseline
    notes: list[str] = []
    reference = _reference_times(ctx, notes)
    scored = score_sizes([ctx.size(baseline=baseline, reference=reference)])
    if ctx.options.profile != "none":
        notes.append(PROFILE_NOTE)
    return ctx.base(verdict=Verdict.OK, kind="baseline", reason="eager Model timed", sizes=scored.sizes,
                    flags=scored.flags, baseline_cached=cached, notes=tuple(notes))


def _validate(ctx: TorchContext) -> Evaluation:
    """Is the task's Model a usable reference (kind='validate')? It must run at the task's shapes, give the
    same output twice under one seed (within the tolerance; bitwise is noted), give finite outputs, and agree
    with a float64 run on the CPU within the tolerance. That last run is skipped, with a note, when it does
    not finish within options.check_timeout_s or the outputs exceed 256 MiB: a CPU float64 pass over a large
    convolution can take far longer than the GPU work it checks."""
    o = ctx.options
    no_gpu = missing_gpu(ctx)
    if no_gpu:
        return ctx.base(verdict=Verdict.NO_GPU, kind="validate", reason=no_gpu)
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: validate the reference Model ({o.torch_trials} seeds, twice each)")
    saved = ctx.work / "reference" / "reference-outputs.pt"  # the Model's processes write only there
    with ctx.phase("check"):
        run = ctx.child("validate", o.check_timeout_s, impl="model", extra=["--save", str(saved)])
    if not run.ok:
        return _crashed(ctx, run, kind="validate", who="the reference Model failed: ")
    data = run.data or {}
    notes = list(data.get("notes", []))
    if not data.get("ok"):
        problems = list(data.get("problems", []))
        size = ctx.size(correct=False, first_mismatch={"error": "; ".join(problems)})
        return ctx.base(verdict=Verdict.INCORRECT, kind="validate", sizes=(size,), notes=tuple(notes),
                        reason="the reference Model is not usable: " + "; ".join(problems))
    agreed = "no CPU float64 comparison"
    if saved.is_file():
        ctx.progress(f"{ctx.spec.name}/{ctx.precision}: compare with a float64 run on the CPU")
        with ctx.phase("validate_cpu"):
            cpu = ctx.child("validate_cpu", o.check_timeout_s, impl="model", lock=False, hide_gpu=True,
                            name="validate-cpu", extra=["--load", str(saved)])
        if cpu.result.timed_out:
            notes.append(f"CPU float64 comparison skipped: it took longer than {o.check_timeout_s:.0f} s")
        elif not cpu.ok:
            notes.append(f"CPU float64 comparison skipped: {(cpu.crash.message if cpu.crash else '')[:300]}")
        elif not (cpu.data or {}).get("agrees"):
            mismatch = dict(cpu.data.get("first_mismatch") or {})
            tol = ctx.spec.tolerance(ctx.precision)
            mismatch.update(atol=tol.atol, rtol=tol.rtol)
            size = ctx.size(correct=False, first_mismatch=mismatch)
            detail = _mismatch_reason(ctx, size)
            return ctx.base(verdict=Verdict.INCORRECT, kind="validate", sizes=(size,), notes=tuple(notes),
                            reason=f"the reference on {ctx.device} disagrees with float64 on the CPU beyond the "
                                   f"tolerance ({detail}): widen [tolerance.{ctx.precision}] or check the task")
        else:
            agreed = "agrees with a float64 run on the CPU"
    return ctx.base(verdict=Verdict.OK, kind="validate", sizes=(ctx.size(correct=True),), notes=tuple(notes),
                    reason=f"the reference runs, is deterministic under a seed, gives finite outputs and {agreed}"
                    if agreed != "no CPU float64 comparison" else
                    "the reference runs, is deterministic under a seed and gives finite outputs (no CPU float64 "
                    "comparison)")


STEPS = Steps(context=TorchContext, candidate=_evaluate, baseline=_evaluate_baseline, validate=_validate,
              precheck=precheck)
evaluate_pytorch, evaluate_pytorch_baseline, validate_pytorch = entry_points(STEPS)
