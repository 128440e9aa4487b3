"""Evaluate one (task, precision, candidate): the protocol of docs/evaluation.md, end to end.

static checks -> build -> check (all sizes x seeds) -> [crash: locate the size,
memcheck it] -> time baseline (cached) and candidate under the GPU lock ->
score -> optional ncu profile. Also a baseline-only evaluation (round 0 of
the pipeline) and `validate` (baseline vs the CPU reference).

Every outcome is an `Evaluation`; nothing here raises for a bad candidate.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from worker.engine import ncu
from worker.engine import toolchain as tc
from worker.engine.context import EvalOptions, Progress, guarded
from worker.engine.entry import Steps, entry_points
from worker.engine.harness import (
    SYSTEM_KINDS,
    ComparedRun,
    HarnessRun,
    candidate_library,
    format_size,
    harness_argv,
    phase_name,
)
from worker.engine.results import (
    CompileResult,
    CrashInfo,
    Evaluation,
    Profile,
    SizeResult,
    TimingStats,
    Verdict,
    first_of,
)
from worker.engine.scoring import score_sizes, steady
from worker.engine.timing import TimingCache, batches_for, beyond_wall_time, syncs_per_call, timings_by_size
from worker.formats.cuda.build import BuildResult, build, harness_hash
from worker.formats.cuda.context import CudaContext
from worker.formats.cuda.spec import TaskSpec
from worker.formats.cuda.static_checks import baseline_kernel_names, check_source
from worker.formats.cuda.verdicts import merge_check, mismatch_reason, timed_call_failure, timing_below_profiler

# ---------------------------------------------------------------- public entry points


def evaluate_reference(
    spec: TaskSpec,
    precision: str,
    options: EvalOptions | None = None,
    *,
    compile_only: bool = False,
    chain: tc.Toolchain | None = None,
    work_dir: Path | str | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """The task's library reference (reference.toml), checked and timed like a candidate (kind='reference').

    Its source is trusted: no static checks, and its libraries are linked outside the whitelist."""
    ctx = CudaContext(spec, precision, options or EvalOptions(), chain, work_dir, progress)
    source = spec.reference_source(precision)
    if source is None:
        return ctx.base(verdict=Verdict.REJECTED, kind="reference",
                        reason=f"{spec.name} has no library reference for {precision} (no reference.toml entry)")
    ctx.trusted_libraries = spec.reference.libraries
    ctx.trusted = True
    return guarded(ctx, "reference", lambda: replace(
        _evaluate(ctx, source.read_text(encoding="utf-8"), None, compile_only, trusted=True), kind="reference"))


def _validate(ctx: CudaContext) -> Evaluation:
    """The baseline against the task's CPU reference, every size and seed (kind='validate')."""
    spec, precision = ctx.spec, ctx.precision
    built = _build(ctx, None, None)
    if isinstance(built, Evaluation):
        return replace(built, kind="validate")
    if ctx.chain.gpu is None:
        return ctx.base(verdict=Verdict.NO_GPU, kind="validate", reason=_no_gpu(ctx))
    ctx.progress(f"{spec.name}/{precision}: validate baseline against the CPU reference")
    with ctx.phase("check"):
        run = ctx.run("validate", "baseline", list(spec.sizes), ctx.options.check_timeout_s, reference=True)
    if not run.ok:
        return _crashed(ctx, run, kind="validate", sizes=ctx.sizes(), locate=True)
    sizes = merge_check(ctx.sizes(), run.data)
    bad = [s for s in sizes if not s.correct or s.inputs_unchanged is False]
    if bad:
        return ctx.base(
            verdict=Verdict.INCORRECT,
            kind="validate",
            sizes=tuple(sizes),
            reason="baseline disagrees with the CPU reference: " + mismatch_reason(bad[0]),
        )
    return ctx.base(
        verdict=Verdict.OK,
        kind="validate",
        sizes=tuple(sizes),
        reason="baseline matches the CPU reference at every size and seed",
    )


# ---------------------------------------------------------------- the steps


def _no_gpu(ctx: CudaContext) -> str:
    return f"this run needs a GPU and none is present ({ctx.chain.gpu_reason})"


def _build(ctx: CudaContext, source: str | None, flags: str | None) -> BuildResult | Evaluation:
    o = ctx.options
    what = "baseline + harness + candidate" if source is not None else "baseline + harness"
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: compile {what} for {ctx.chain.arch}")
    with ctx.phase("compile"):
        built = build(
            ctx.spec,
            ctx.precision,
            ctx.chain,
            source,
            flags,
            work_dir=ctx.work / "build",
            harness_dir=o.harness_dir,
            cache_dir=o.build_cache,
            timeout_s=o.compile_timeout_s,
            trusted_libraries=ctx.trusted_libraries,
            trusted=ctx.trusted,
        )
    if built.ok:
        if built.cache_hits:
            ctx.progress(f"  build cache hits: {', '.join(built.cache_hits)}")
        ctx.exe = built.executable or ""
        ctx.reference_exe = built.reference or ""
        ctx.queued = ctx.options.queued_timing and not built.unordered
        return built
    if built.refused:  # the object check on the candidate's host object
        return ctx.base(verdict=Verdict.REJECTED, reason=first_of(built.refused), static_violations=built.refused,
                        compile=built.candidate, notes=built.notes)
    failure = built.failure
    assert failure is not None
    first_error = next((ln.strip() for ln in failure.log.splitlines() if "error" in ln.lower()), "")
    if failure.role == "link":
        reason = f"link failed: {built.link_blame}"
    elif failure.role != "candidate":
        reason = f"{failure.role} failed to compile (a task/harness problem, not the candidate's): {first_error}"
    else:
        reason = f"candidate failed to compile: {first_error}"
    return ctx.base(
        verdict=Verdict.COMPILE_ERROR,
        reason=reason,
        compile=failure,
        notes=built.notes,
        kind="candidate" if source is not None else "baseline",
    )


def _evaluate(ctx: CudaContext, source: str, flags: str | None, compile_only: bool,
              trusted: bool = False) -> Evaluation:
    spec, precision, o = ctx.spec, ctx.precision, ctx.options
    kernels = (
        baseline_kernel_names(spec.baseline_source(precision))
        if spec.baseline_source(precision).is_file() and not trusted
        else ()
    )
    report = check_source(source, spec, precision, kernels) if not trusted else None
    if report is not None and not report.ok:
        msgs = report.messages()
        return ctx.base(verdict=Verdict.REJECTED, reason=first_of(msgs), static_violations=msgs)

    built = _build(ctx, source, flags)
    if isinstance(built, Evaluation):
        return built
    compiled, notes = built.candidate, list(built.notes)
    if o.queued_timing and built.unordered:
        shown = first_of(built.unordered, 3)
        notes.append(f"timed with a device-wide synchronize after every call, not queued, the baseline too: the "
                     f"candidate or its baseline uses {shown}, which can run work a queued sample cannot time (work "
                     "the default stream does not order, or queued where no wrapper sees it: docs/evaluation.md, "
                     "\"Timing protocol\")")
    if compile_only:
        where = "" if ctx.chain.gpu else f"; no GPU is present ({ctx.chain.gpu_reason}), so nothing was run"
        return ctx.base(
            verdict=Verdict.OK,
            kind="compile_only",
            compile=compiled,
            notes=tuple(notes),
            reason=f"compiled and linked for {ctx.chain.arch}{where}",
        )
    if ctx.chain.gpu is None:
        return ctx.base(verdict=Verdict.NO_GPU, reason=_no_gpu(ctx), compile=compiled, notes=tuple(notes))

    # Correctness: every size, every seed, against the baseline's output, decided by a process that never ran
    # the candidate's code (docs/evaluation.md, "Who decides the verdict").
    ctx.progress(f"{spec.name}/{precision}: check {len(spec.sizes)} sizes x {o.seeds} seeds")
    with ctx.phase("check"):
        pair = ctx.compared(list(spec.sizes), o.check_timeout_s)
    failed = _check_failure(ctx, pair, compiled, tuple(notes))
    if failed is not None:
        return failed
    sizes = merge_check(ctx.sizes(), pair.reference.data)
    bad = [s for s in sizes if not s.correct or s.inputs_unchanged is False]
    if bad:
        return ctx.base(
            verdict=Verdict.INCORRECT,
            reason=mismatch_reason(bad[0]),
            sizes=tuple(sizes),
            compile=compiled,
            notes=tuple(notes),
        )

    # Timing: the candidate with its baseline beside it, turn by turn (or the baseline alone, cached, then the
    # candidate).
    timed = _time_candidate(ctx, sizes)
    if isinstance(timed, Evaluation):
        return replace(timed, kind="candidate", compile=compiled, notes=tuple(notes))
    run, baseline, cached = timed.run, timed.baseline, timed.cached
    if timed.beside:
        notes.append(f"timed beside its baseline, turn by turn on the GPU and on one CPU ({timed.beside}); P "
                     "divides by the baseline's times of this run, not its cached ones (docs/evaluation.md, "
                     "\"Interleaved timing\")")
    if not run.ok:
        return _crashed(ctx, run, compile=compiled, notes=tuple(notes), sizes=sizes)
    wrong = timed_call_failure(sizes, run.data) or beyond_wall_time(run.data, run.result.wall_s) or None
    if wrong is not None:
        return ctx.base(verdict=Verdict.INCORRECT, reason=wrong, sizes=tuple(sizes), compile=compiled,
                        notes=tuple(notes))
    cand = timings_by_size(run.data)
    sizes = [replace(s, baseline=baseline.get(s.index), candidate=cand.get(s.index)) for s in sizes]
    scored = score_sizes(sizes)

    profiles: tuple[Profile, ...] = ()
    if o.profile != "none":
        # The candidate's kernels are those ptxas compiled in candidate.cu (any names); ncu matches them.
        names = sorted({re.escape(k.kernel) for k in (compiled.resources if compiled else ())})
        profiles, note = _profile(ctx, "candidate", "|".join(names) if names else "_optimized")
        notes += [note] if note else []
        forged = timing_below_profiler(scored.sizes, profiles)
        if forged:
            return ctx.base(verdict=Verdict.INCORRECT, reason=forged, sizes=scored.sizes, compile=compiled,
                            notes=tuple(notes), profiles=profiles)
    return ctx.base(
        verdict=Verdict.OK,
        reason="correct at every size and seed",
        sizes=scored.sizes,
        score=scored.score,
        geomean_speedup=scored.geomean,
        expert_speedup=scored.expert,
        flags=scored.flags,
        notes=tuple(notes),
        compile=compiled,
        profiles=profiles,
        baseline_cached=cached,
    )


@dataclass(frozen=True)
class _Timed:
    run: HarnessRun  # the candidate's timing run
    baseline: dict[int, TimingStats]  # the baseline times its P divides
    cached: bool  # they came from the timing cache
    beside: str = ""  # why the baseline was timed beside the candidate; "" when it was not


def _time_candidate(ctx: CudaContext, sizes: list[SizeResult]) -> _Timed | Evaluation:
    """The candidate's timing and the baseline times its P divides. Beside it, taking turns on the GPU and on one CPU
    (docs/evaluation.md, "Interleaved timing"), when asked (`interleave`) or, in the queued protocol, when the
    baseline's call goes back and forth between host and GPU (syncs_per_call above 1): the host's speed, which
    moves from one second to the next on a VM, is then in both times alike. Otherwise the baseline's cached solo
    times. An Evaluation when the baseline failed (a task problem); the candidate's own failure is the caller's."""
    spec, precision, o = ctx.spec, ctx.precision, ctx.options
    baseline: dict[int, TimingStats] = {}
    cached = False
    if not o.interleave or o.batch_below_ms > 0 or ctx.queued:  # its times decide the batches and the pairing
        solo, cached = _baseline_times(ctx)
        if isinstance(solo, Evaluation):
            return solo
        baseline = solo
    trips = syncs_per_call(baseline) if ctx.queued else 0.0
    if not o.interleave and trips <= 1:
        ctx.progress(f"{spec.name}/{precision}: time candidate ({o.warmup} warm-up + {o.iters} timed calls per size)")
        run = ctx.timed("time", "the candidate", lambda: ctx.run("time", "candidate", list(spec.sizes),
                                                                o.time_timeout_s),
                        failed=lambda r: _timing_failed(sizes, r))
        return _Timed(run, baseline, cached)
    beside = ("asked for" if o.interleave else
              f"the baseline's call synchronizes with the host {trips:.3g} times, so the host's speed is in its time")
    ctx.progress(f"{spec.name}/{precision}: time candidate and baseline, turn by turn ({o.warmup} warm-up + "
                 f"{o.iters} timed calls per size each)")
    # Each waits while the other has its turn.
    pair = ctx.timed("time", "the candidate and its baseline",
                     lambda: ctx.interleaved(list(spec.sizes), 2 * o.time_timeout_s),
                     failed=lambda p: _timing_failed(sizes, cast(HarnessRun, p.candidate)))
    run = cast(HarnessRun, pair.candidate)
    ref = cast(HarnessRun, pair.reference)
    if run.ok and not ref.ok:
        crashed = _crashed(ctx, ref, sizes=ctx.sizes(), kind="baseline")
        return replace(crashed, reason="the baseline failed while timed beside the candidate (a task problem): "
                       + crashed.reason)
    return _Timed(run, timings_by_size(ref.data), False, beside)


def _timing_failed(sizes: list[SizeResult], run: HarnessRun) -> bool:
    """The candidate's timing run decides a verdict other than ok (a crash, a wrong timed call, times beyond its
    wall time): kept as it is, never timed again (EvalContext.timed)."""
    return (not run.ok or timed_call_failure(sizes, run.data) is not None
            or bool(beyond_wall_time(run.data, run.result.wall_s)))


def _check_failure(ctx: CudaContext, pair: ComparedRun, compiled: CompileResult | None,
                   notes: tuple[str, ...]) -> Evaluation | None:
    """The verdict when the split check did not end with a decision (ComparedRun.failed_side), else None."""
    side = pair.failed_side
    if side == "candidate":
        return _crashed(ctx, pair.candidate, compile=compiled, notes=notes, sizes=ctx.sizes(), locate=True)
    if side == "evidence":
        message = pair.reference.crash.message if pair.reference.crash else ""
        return ctx.base(
            verdict=Verdict.INCORRECT,
            reason=(f"the candidate's process ended without sending what the check needs: {message} (the "
                    "reference's process decides the verdict from the buffers the candidate's process sends after "
                    "each checked call; a short or malformed stream is refused)"),
            sizes=tuple(ctx.sizes()), compile=compiled, notes=notes,
        )
    if side is None:
        return None
    crashed = _crashed(ctx, pair.reference, compile=compiled, notes=notes, sizes=ctx.sizes())
    if side == "timeout":
        return crashed
    return replace(crashed, verdict=Verdict.RUNTIME_ERROR, reason="the reference's side of the check failed (a "
                   f"task/harness problem, not the candidate's): {crashed.reason}")


def _evaluate_baseline(ctx: CudaContext) -> Evaluation:
    built = _build(ctx, None, None)
    if isinstance(built, Evaluation):
        return built
    if ctx.chain.gpu is None:
        return ctx.base(verdict=Verdict.NO_GPU, kind="baseline", reason=_no_gpu(ctx), compile=built.baseline)
    baseline, cached = _baseline_times(ctx)
    if isinstance(baseline, Evaluation):
        return replace(baseline, kind="baseline", compile=built.baseline)
    sizes = score_sizes([replace(s, baseline=baseline.get(s.index)) for s in ctx.sizes()])
    profiles: tuple[Profile, ...] = ()
    notes: list[str] = []
    if ctx.options.profile != "none":
        names = baseline_kernel_names(ctx.spec.baseline_source(ctx.precision))
        # Whole base names; a template kernel may be listed with its arguments ("k<256>").
        regex = "^(" + "|".join(re.escape(n) for n in names) + ")($|<)" if names else None
        profiles, note = _profile(ctx, "baseline", regex)
        notes += [note] if note else []
    return ctx.base(
        verdict=Verdict.OK,
        kind="baseline",
        reason="baseline timed",
        sizes=sizes.sizes,
        flags=sizes.flags,
        compile=built.baseline,
        profiles=profiles,
        baseline_cached=cached,
        notes=tuple(notes),
    )


def _crashed(
    ctx: CudaContext,
    run: HarnessRun,
    *,
    sizes: list[SizeResult],
    locate: bool = False,
    kind: str = "candidate",
    compile: CompileResult | None = None,
    notes: tuple[str, ...] = (),
) -> Evaluation:
    """A harness run that did not complete: find the size, keep the memcheck log, pick the verdict."""
    crash = run.crash or CrashInfo("missing_output", "no result JSON")
    impl = run.impl
    system = crash.kind in SYSTEM_KINDS
    if crash.size_index is None and len(ctx.spec.sizes) == 1:
        crash = replace(crash, size_index=0)
    if locate and crash.size_index is None and not system:
        # The harness left no checkpoint: rerun the sizes one by one to name the one that fails.
        for i, size in enumerate(ctx.spec.sizes):
            ctx.progress(f"  locating the crash: size {i} ({format_size(size)})")
            with ctx.phase("locate"):
                mode = "check" if run.mode == "outputs" else run.mode  # one process, no pipe, to find the size
                single = ctx.run(mode, impl, [size], ctx.options.check_timeout_s, name=f"locate-{i}",
                                 reference=impl == "baseline")
            if not single.ok:
                crash = replace(single.crash or crash, size_index=i)
                break
    memcheck = ""
    if kind == "candidate" and not system and crash.kind != "timeout":
        memcheck = _memcheck(ctx, impl, crash.size_index)
    verdict = {"timeout": Verdict.TIMEOUT, "no_device": Verdict.NO_GPU}.get(crash.kind, Verdict.RUNTIME_ERROR)
    index = crash.size_index
    where = (
        f" at {format_size(ctx.spec.sizes[index])}"
        if index is not None and index < len(ctx.spec.sizes)
        else ""
    )
    blame = " (not the candidate's fault: a task, harness or machine problem)" if system else ""
    return ctx.base(
        verdict=verdict,
        kind=kind,
        reason=f"{crash.kind}{where} during {phase_name(run.mode)}: {crash.message}{blame}",
        crash=crash,
        memcheck_log=memcheck,
        sizes=tuple(sizes),
        compile=compile,
        notes=notes,
    )


def _memcheck(ctx: CudaContext, impl: str, size_index: int | None) -> str:
    if not ctx.chain.sanitizer:
        return "compute-sanitizer not found; no memcheck log"
    size = ctx.spec.sizes[size_index if size_index is not None else 0]
    ctx.progress(f"  compute-sanitizer memcheck at {format_size(size)}")
    prefix = [ctx.chain.sanitizer, "--tool", "memcheck", "--print-limit", "30", "--error-exitcode", "86"]
    with ctx.phase("memcheck"):
        run = ctx.run(
            "check", impl, [size], ctx.options.memcheck_timeout_s, name="memcheck", prefix=prefix, seeds=1
        )
    log = run.result.output
    if run.result.timed_out:
        log += f"\n[memcheck stopped after {ctx.options.memcheck_timeout_s:.0f} s]"
    return log[-64 * 1024 :]


# ---------------------------------------------------------------- baseline timing cache


def baseline_cache(ctx: CudaContext) -> TimingCache:
    """The baseline's cached times: keyed by the task, precision, GPU model, harness, sources, sizes,
    constants, the timing protocol and nvcc."""
    spec, o = ctx.spec, ctx.options
    parts = {
        "task": spec.name,
        "precision": ctx.precision,
        "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "",
        "harness": harness_hash(Path(o.harness_dir)),
        "sources": hashlib.sha256(
            spec.harness_source().read_bytes() + spec.baseline_source(ctx.precision).read_bytes()
        ).hexdigest(),
        "sizes": [format_size(s) for s in spec.sizes],
        "constants": spec.constants,
        "warmup": o.warmup,
        "warmup_ms": o.warmup_ms,
        "iters": o.iters,
        "seed_base": o.seed_base,
        "batch_below_ms": o.batch_below_ms,
        "protocol": "queued" if ctx.queued else "synchronized",
        "nvcc": ctx.chain.nvcc_version,
    }
    return TimingCache(o, f"{spec.name}-{ctx.precision}", parts)


def _baseline_times(ctx: CudaContext) -> tuple[dict[int, TimingStats] | Evaluation, bool]:
    o = ctx.options
    cache = baseline_cache(ctx)

    def decode(data: dict[str, Any]) -> dict[int, TimingStats] | None:
        times = {int(k): TimingStats.from_dict(v) for k, v in data["timings"].items()}
        if not steady(times.values(), o.cache_max_cv):  # kept by a version that cached noisy times: measured again
            return None
        ctx.batches = [int(b) for b in data.get("batches") or [1] * len(ctx.spec.sizes)]
        return times if len(times) == len(ctx.spec.sizes) == len(ctx.batches) else None

    cached = cache.load(decode)
    if cached is not None:
        ctx.progress(f"{ctx.spec.name}/{ctx.precision}: baseline times from cache")
        return cached, True
    ctx.batches = None
    ctx.progress(
        f"{ctx.spec.name}/{ctx.precision}: time baseline ({o.warmup} warm-up + {o.iters} timed calls)"
    )
    run = ctx.timed("time_baseline", "the baseline",
                    lambda: ctx.run("time", "baseline", list(ctx.spec.sizes), o.time_timeout_s, reference=True))
    if not run.ok:
        crashed = _crashed(ctx, run, sizes=ctx.sizes(), kind="baseline")
        return replace(
            crashed, reason="the baseline failed while timing (a task problem): " + crashed.reason
        ), False
    times = timings_by_size(run.data)
    batches = batches_for(times, len(ctx.spec.sizes), o.batch_below_ms)
    if any(b > 1 for b in batches):  # timed again as every candidate will be: these sizes in batches
        ctx.batches = batches
        ctx.progress(f"{ctx.spec.name}/{ctx.precision}: time baseline again, in batches ({batches})")
        run = ctx.timed("time_baseline", "the baseline in batches",
                        lambda: ctx.run("time", "baseline", list(ctx.spec.sizes), o.time_timeout_s,
                                        name="time-baseline-batched", reference=True))
        if not run.ok:
            crashed = _crashed(ctx, run, sizes=ctx.sizes(), kind="baseline")
            return replace(crashed, reason="the baseline failed while timed in batches (a task problem): "
                           + crashed.reason), False
        times = timings_by_size(run.data)
    # Never cache times the GPU's slowdown spoiled, nor noisy ones: the next evaluation measures them again.
    if len(times) == len(ctx.spec.sizes) and not ctx.slowed and steady(times.values(), o.cache_max_cv):
        cache.store({
            "task": ctx.spec.name,
            "precision": ctx.precision,
            "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "",
            "timings": {str(k): v.to_dict() for k, v in times.items()},
            "batches": batches,
        })
    return times, False


# ---------------------------------------------------------------- profiling


def _profile(ctx: CudaContext, impl: str, kernel_regex: str | None) -> tuple[tuple[Profile, ...], str]:
    """One ncu call per size; a failure becomes a note, never a verdict."""
    o = ctx.options
    if not ctx.chain.ncu:
        return (), "profile skipped: ncu (Nsight Compute) not found"
    profiles: list[Profile] = []
    gpu = ctx.chain.gpu.name if ctx.chain.gpu else ""
    exe = ctx.reference_exe if impl == "baseline" else ctx.exe
    library = candidate_library(ctx.exe) if impl == "candidate" else None  # the same for every size
    for i, size in enumerate(ctx.spec.sizes):
        ctx.progress(f"{ctx.spec.name}/{ctx.precision}: ncu ({o.profile}) {impl} at {format_size(size)}")
        # The harness's JSON inside the tool's run folder: the only folder its confinement lets the target write.
        work = ctx.folder(impl == "baseline") / f"ncu-{i}"
        work.mkdir(parents=True, exist_ok=True)
        out = work / "profile.json"
        # The same command line as every other run (harness_argv), the candidate's shared object included.
        program = harness_argv(exe, ctx.spec, ctx.precision, "profile", impl, [size], str(out),
                               seed_base=o.seed_base, library=library)
        with ctx.phase("profile"), ctx.gpu():
            res = ncu.profile(
                ctx.chain, program, o.profile, kernel_regex, work, o.profile_timeout_s,
                read=(library,) if library else (),
            )
        if not res.ok:
            return tuple(profiles), f"profile at {format_size(size)} failed: {res.reason}"
        profiles += [
            ncu.to_profile(k, i, dict(size), o.profile, o.thresholds, ctx.chain.ncu_version, gpu)
            for k in res.kernels
        ]
    return tuple(profiles), ""


STEPS = Steps(context=CudaContext, candidate=_evaluate, baseline=_evaluate_baseline, validate=_validate)
evaluate, evaluate_baseline, validate = entry_points(STEPS)
