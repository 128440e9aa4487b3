"""The make runner (see worker.formats.make.spec for its decisions): build, run, validate and time a
task.yaml solution against the shipped one (cached), and the entry points."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from worker.engine import confine, objcheck, sandbox
from worker.engine.context import EvalContext
from worker.engine.entry import Steps, entry_points
from worker.engine.harness import HARNESS_LIMITS, classify_crash
from worker.engine.results import CompileResult, CrashInfo, Evaluation, SizeResult, Verdict, first_of
from worker.engine.scoring import geometric_mean, score_sizes
from worker.engine.timing import TimingCache, stats_from_samples
from worker.formats.make import outputs
from worker.formats.make.output import matches_success, parse_times, quote_output, times_problem
from worker.formats.make.spec import BUILD_DIRS, OUTPUTS_ENV, MakeTaskSpec, is_build_output
from worker.formats.make.static_checks import check_solution


@dataclass(frozen=True)
class _Run:
    """One build + run of a solution file in its own workspace."""

    compile: CompileResult
    result: sandbox.SandboxResult | None = None  # None: the build failed (or compile_only)
    outputs: Path | None = None  # its $KW_OUTPUTS folder, where the task declares correctness.outputs


@dataclass(frozen=True)
class _Timed:
    """The shipped solution's cases (kernel ms, reference ms), and how they were obtained."""

    cases: tuple[tuple[float, float | None], ...]
    cached: bool
    compile: CompileResult | None = None


class _Context(EvalContext):
    """A task.yaml evaluation: the harness owns its repetitions, so one seed and one iteration are reported."""

    scratch_prefix = "kw-make"

    def evaluation_fields(self) -> dict[str, Any]:
        return {"seeds": 1, "iters": 1, "toolchain": self.chain.describe()}

    def gpu_problem(self) -> str:
        gpu, need = self.chain.gpu, self.spec.hardware.min_sm
        if gpu is None:
            return f"this task needs a GPU and none is present ({self.chain.gpu_reason})"
        have = _sm_of(gpu.compute_capability)
        if have is not None and have < need:
            return f"needs sm_{need} or newer; this worker's {gpu.name} is sm_{have}"
        return ""

    def build_env(self) -> dict[str, str]:
        env = dict(self.spec.runner.env, KW_ARCH=self.chain.arch)
        if self.chain.nvcc:
            # Makefiles call plain `nvcc`; the worker may have found it outside PATH.
            path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
            env["PATH"] = f"{Path(self.chain.nvcc).parent}{os.pathsep}{path}"
        return env

    def run_env(self) -> dict[str, str]:
        tol = self.spec.tolerance(self.precision)
        return dict(self.spec.runner.env, KW_ATOL=repr(tol.atol), KW_RTOL=repr(tol.rtol),
                    KW_SEED=str(self.options.seed_base), KW_ARCH=self.chain.arch)


def _sm_of(capability: str) -> int | None:
    m = re.fullmatch(r"(\d+)\.(\d+)", capability.strip())
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None


def _validate(ctx: _Context) -> Evaluation:
    """The task itself is sound on this GPU: the shipped solution keeps the anti-cheat rules, builds, passes
    its own validator, and its times parse. Refreshes the baseline timing cache."""
    spec, precision = ctx.spec, ctx.precision
    report = check_solution(spec.baseline_source(precision).read_text(encoding="utf-8", errors="replace"), spec)
    if not report.ok:
        msgs = report.messages()
        return ctx.base(verdict=Verdict.REJECTED, kind="validate", static_violations=msgs,
                        reason=f"the shipped {spec.runner.solution_file} breaks the task's own rules (a task "
                               f"problem): {msgs[0]}")
    return replace(_evaluate_baseline(ctx, fresh=True), kind="validate")


def _baseline(ctx: _Context) -> Evaluation:
    """Round 0: the shipped solution file, built, validated and timed (cached) alone. Its expert_speedup is
    the reference's time over the shipped solution's: how far the start is."""
    return _evaluate_baseline(ctx, fresh=False)


def _evaluate(ctx: _Context, source: str, flags: str | None, compile_only: bool) -> Evaluation:
    spec = ctx.spec
    notes = (f"compile flags come from the task's Makefile; the proposed {flags.strip()!r} were not used",) \
        if flags and flags.strip() else ()
    if not compile_only:
        problem = ctx.gpu_problem()
        if problem:
            return ctx.base(verdict=Verdict.NO_GPU, reason=problem, notes=notes)
    report = check_solution(source, spec)
    if not report.ok:
        msgs = report.messages()
        return ctx.base(verdict=Verdict.REJECTED, static_violations=msgs, notes=notes,
                        reason=first_of(msgs))

    run = _build_and_run(ctx, "candidate", source, run=not compile_only)
    if isinstance(run, Evaluation):
        return replace(run, notes=notes)
    if compile_only:
        where = "" if ctx.chain.gpu else f"; no GPU is present ({ctx.chain.gpu_reason}), so nothing was run"
        return ctx.base(verdict=Verdict.OK, kind="compile_only", compile=run.compile, notes=notes,
                        reason=f"built with `{spec.build.cmd}` for {ctx.chain.arch}{where}")
    assert run.result is not None
    failed = _judge(ctx, run.result, "candidate", run.compile)
    if failed is None and spec.correctness.outputs is not None:
        failed = _judge_outputs(ctx, run)
    if failed is not None:
        return replace(failed, notes=notes)
    if not spec.performance.enabled:
        return ctx.base(verdict=Verdict.OK, compile=run.compile, notes=notes,
                        reason="passed the task's validator (this task measures no performance)")

    # The shipped solution first: when its output does not parse either, the harness is at fault.
    baseline = _baseline_times(ctx, fresh=False)
    if isinstance(baseline, Evaluation):
        return replace(_task_broke(ctx, run, baseline), notes=notes)
    times = parse_times(run.result.stdout, spec)
    problem = times_problem(times, spec)
    if problem:
        return ctx.base(verdict=Verdict.INCORRECT, compile=run.compile, notes=notes,
                        reason=f"the run passed its validator but its times do not parse: {problem}; output: "
                               f"{quote_output(run.result.stdout)}")
    if len(baseline.cases) != len(times):
        return ctx.base(verdict=Verdict.INCORRECT, compile=run.compile, notes=notes,
                        reason=f"the run printed {len(times)} kernel time(s); the shipped solution's prints "
                               f"{len(baseline.cases)}: the harness did not run every case")
    sizes = [
        SizeResult(index=i, params={"case": i + 1}, complexity=1.0, correct=True, baseline=stats_from_samples([b]),
                   candidate=stats_from_samples([k]), reference=stats_from_samples([r]) if r is not None else None)
        for i, ((k, r), (b, _)) in enumerate(zip(times, baseline.cases, strict=True))
    ]
    scored = score_sizes(sizes)
    return ctx.base(
        verdict=Verdict.OK,
        reason=f"passed the task's validator; {len(sizes)} case(s) timed",
        sizes=scored.sizes, score=scored.score, geomean_speedup=scored.geomean, expert_speedup=scored.expert,
        flags=scored.flags, notes=notes, compile=run.compile, baseline_cached=baseline.cached,
    )


def _evaluate_baseline(ctx: _Context, fresh: bool) -> Evaluation:
    spec = ctx.spec
    problem = ctx.gpu_problem()
    if problem:
        return ctx.base(verdict=Verdict.NO_GPU, kind="baseline", reason=problem)
    if not spec.performance.enabled:
        shipped = _run_shipped(ctx, "baseline")
        if isinstance(shipped, Evaluation):
            return shipped
        run, _ = shipped
        return ctx.base(verdict=Verdict.OK, kind="baseline", compile=run.compile,
                        reason="the shipped solution passes its validator (this task measures no performance)")
    timed = _baseline_times(ctx, fresh)
    if isinstance(timed, Evaluation):
        return replace(timed, kind="baseline")
    scored = score_sizes([  # flags only: a baseline has no candidate to compare
        SizeResult(index=i, params={"case": i + 1}, complexity=1.0, correct=True, baseline=stats_from_samples([b]),
                   reference=stats_from_samples([r]) if r is not None else None)
        for i, (b, r) in enumerate(timed.cases)
    ])
    sizes = [replace(s, reference_speedup=s.reference.mean_ms / s.baseline.mean_ms)
             if s.reference is not None and s.baseline is not None and s.baseline.mean_ms > 0 else s
             for s in scored.sizes]
    ratios = [s.reference_speedup for s in sizes if s.reference_speedup]
    return ctx.base(
        verdict=Verdict.OK, kind="baseline", sizes=tuple(sizes), flags=scored.flags,
        expert_speedup=geometric_mean(ratios) if ratios and len(ratios) == len(sizes) else None,
        compile=timed.compile, baseline_cached=timed.cached,
        reason=f"the shipped solution passes its validator; {len(sizes)} case(s) timed"
               + (" (from the cache)" if timed.cached else ""),
    )


def _shipped(spec: MakeTaskSpec) -> str:
    return spec.baseline_source(spec.precision).read_text(encoding="utf-8", errors="replace")


def _blame_task(ev: Evaluation, kind: str) -> Evaluation:
    return replace(ev, kind=kind, reason=f"the shipped solution failed (a task problem, not the candidate's): "
                                         f"{ev.reason}")


def _ignore_outputs(folder: str, names: list[str]) -> set[str]:
    out = set()
    for name in names:
        path = Path(folder) / name
        if path.is_dir():
            skip = name in BUILD_DIRS
        else:
            skip = path.is_file() and is_build_output(path)
        if skip or name.startswith("."):
            out.add(name)
    return out


def _workspace(ctx: _Context, role: str, source: str) -> Path:
    """A fresh copy of the task folder (no hidden files, no build outputs) with `source` as the solution."""
    ws = ctx.work / role
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(ctx.spec.directory, ws, ignore=_ignore_outputs, ignore_dangling_symlinks=True)
    target = ws / ctx.spec.runner.solution_file
    target.unlink(missing_ok=True)  # never write through a link
    target.write_text(source, encoding="utf-8")
    return ws


def _build_and_run(ctx: _Context, role: str, source: str, run: bool = True) -> _Run | Evaluation:
    spec, o = ctx.spec, ctx.options
    ws = _workspace(ctx, role, source)
    timeout = min(o.compile_timeout_s, spec.runner.timeout_sec)
    ctx.progress(f"{spec.name}: build the {role} ({spec.build.cmd})")
    with ctx.phase("compile"):
        # The Makefile is the candidate's to run (any command): confined to its workspace (docs/threat-model.md).
        res = sandbox.run(spec.build.argv, ws, timeout, env_extra=ctx.build_env(), name="kw-build",
                          policy=confine.build_policy(ws))
    log = res.output + (f"\n[stopped after the {timeout:.0f} s build limit]" if res.timed_out else "")
    compiled = CompileResult(role=role, ok=res.ok, command=shlex.join(spec.build.argv), log=log,
                             seconds=round(res.wall_s, 3))
    if res.ok:
        program = ws / spec.execute.argv[0]
        if not program.is_file():
            compiled = replace(compiled, ok=False, log=log + f"\n[the build made no {spec.execute.argv[0]}]")
            return ctx.base(verdict=Verdict.COMPILE_ERROR, kind=role, compile=compiled,
                            reason=f"`{spec.build.cmd}` succeeded but made no {spec.execute.argv[0]} (a task "
                                   "problem: check the Makefile's target)")
    else:
        first = next((ln.strip() for ln in log.splitlines() if re.search(r"error|\*\*\*", ln, re.I)), "")
        what = "timed out" if res.timed_out else f"failed (exit status {res.returncode})"
        return ctx.base(verdict=Verdict.COMPILE_ERROR, kind=role, compile=compiled,
                        reason=f"{role} failed to build: `{spec.build.cmd}` {what}" + (f": {first}" if first else ""))
    if role == "candidate":
        refused, note = _object_check(ctx, ws, source)
        if refused:
            return ctx.base(verdict=Verdict.REJECTED, kind=role, compile=compiled, static_violations=refused,
                            notes=(note,) if note else (),
                            reason=first_of(refused))
        if note:
            compiled = replace(compiled, log=compiled.log + f"\n[{note}]")
    if not run:
        return _Run(compiled)
    ctx.progress(f"{spec.name}: run the {role} ({spec.execute.cmd})")
    env = ctx.run_env()
    folder = None
    if spec.correctness.outputs is not None:
        folder = ws / ".kw-outputs"
        env[OUTPUTS_ENV] = str(folder)

    def execute() -> sandbox.SandboxResult:
        if folder is not None:
            outputs.prepare(folder)  # empty again when the run is timed once more
        with ctx.gpu():
            return sandbox.run(spec.execute.argv, ws, spec.runner.timeout_sec, env_extra=env,
                               limits=HARNESS_LIMITS, name="kw-run",
                               policy=confine.candidate_run(ws / spec.execute.argv[0], ws))

    # The task's program checks and times in one run: the clock watch spans both.
    result = ctx.timed("time_baseline" if role == "baseline" else "check", f"the {role}'s run", execute,
                       failed=lambda res: _judge(ctx, res, role, compiled) is not None)
    return _Run(compiled, result, folder)


def _judge_outputs(ctx: _Context, run: _Run) -> Evaluation | None:
    """correctness.outputs: the candidate's outputs against those of the shipped solution, built and run
    afterwards in a workspace of its own (a process that never ran candidate code), compared here. None when
    they agree; else INCORRECT naming the file, the index and the values, or the task's problem."""
    spec, declared = ctx.spec, ctx.spec.correctness.outputs
    assert declared is not None and run.outputs is not None
    outside = "(outputs are judged outside the candidate's process, docs/evaluation.md)"
    try:
        got = outputs.read(run.outputs, declared.dtype)  # read before anything else runs
    except outputs.OutputsError as exc:
        return ctx.base(verdict=Verdict.INCORRECT, compile=run.compile,
                        reason=f"the run passed the task's validator, but {exc} {outside}")
    shipped = _run_shipped(ctx, "reference")
    if isinstance(shipped, Evaluation):
        return _task_broke(ctx, run, shipped)
    _, expected = shipped
    mismatch = outputs.compare(got, expected, declared.dtype, spec.tolerance(ctx.precision))
    if mismatch is None:
        return None
    return ctx.base(verdict=Verdict.INCORRECT, compile=run.compile,
                    reason=f"the run passed the task's validator, but its outputs differ from the shipped "
                           f"solution's on the same inputs: {mismatch.reason} {outside}")


def _run_shipped(ctx: _Context, role: str) -> tuple[_Run, dict] | Evaluation:
    """The shipped solution built and run in a workspace of its own: (its run, the outputs it wrote, {} where the
    task declares none) when it passes its validator; else the task's problem, as an Evaluation."""
    run = _build_and_run(ctx, role, _shipped(ctx.spec))
    if isinstance(run, Evaluation):
        return _blame_task(run, role)
    assert run.result is not None
    failed = _judge(ctx, run.result, role, run.compile)
    if failed is not None:
        return _blame_task(failed, role)
    found = _shipped_outputs(ctx, run)
    return found if isinstance(found, Evaluation) else (run, found)


def _shipped_outputs(ctx: _Context, run: _Run) -> dict | Evaluation:
    """The outputs the shipped solution's run wrote; a task problem when the task declares them and there
    are none (or they cannot be read). {} when the task declares no outputs."""
    declared = ctx.spec.correctness.outputs
    if declared is None or run.outputs is None:
        return {}
    try:
        found, problem = outputs.read(run.outputs, declared.dtype), "it wrote no file there"
    except outputs.OutputsError as exc:
        found, problem = {}, str(exc)
    if found:
        return found
    return ctx.base(verdict=Verdict.RUNTIME_ERROR, kind="baseline", compile=run.compile,
                    crash=CrashInfo("harness_error", problem),
                    reason=f"task.yaml declares correctness.outputs, but the shipped solution's outputs under "
                           f"${OUTPUTS_ENV} cannot be used (a task problem, not the candidate's): {problem}")


def _task_broke(ctx: _Context, run: _Run, failed: Evaluation) -> Evaluation:
    """The candidate passed; the shipped solution it is compared with did not run as it must: blame the task,
    keep the candidate's compile."""
    crash = failed.crash or CrashInfo("harness_error", failed.reason)
    return ctx.base(verdict=Verdict.RUNTIME_ERROR, compile=run.compile, crash=replace(crash, kind="harness_error"),
                    reason=failed.reason)


# What the make format's source rules allow beyond the object check's tables (see static_checks): naive
# solutions end the process in their error checks, and may use signals and threads.
_MAKE_ALSO_ALLOWED = frozenset(
    {"signal", "sigaction", "raise", "setjmp", "_setjmp", "longjmp", "pthread_create", "pthread_join"}
)


def _object_check(ctx: _Context, ws: Path, source: str) -> tuple[tuple[str, ...], str]:
    """The object check (worker.engine.objcheck) on the solution file compiled alone: the Makefile links it
    straight into the executable, so it is compiled once more, to an object, to see its symbols. Returns
    (violations, note); a solution that does not compile alone is judged by its build only (the note says so)."""
    spec = ctx.spec
    solution = spec.runner.solution_file
    if not ctx.chain.nvcc or Path(solution).suffix not in (".cu", ".cpp", ".cc", ".cxx", ".c"):
        return (), ""
    out_dir = ws / ".kw-objcheck"
    out_dir.mkdir(exist_ok=True)
    obj = out_dir / "solution.o"
    argv = [ctx.chain.nvcc, "-O2", "-std=c++17", f"-arch={ctx.chain.arch}", "-DCCCL_DISABLE_NVTX", "-DNVTX_DISABLE",
            "-I.", "-c", solution, "-o", str(obj)]
    res = sandbox.run(argv, ws, ctx.options.compile_timeout_s, env_extra=ctx.build_env(), name="kw-objcheck")
    if not res.ok or not obj.is_file():
        return (), f"object check skipped: {solution} does not compile on its own ({shlex.join(argv[1:])})"
    policy = objcheck.ObjectPolicy(allow_process_exit=True, also_allowed=_MAKE_ALSO_ALLOWED)
    report = objcheck.check_object(obj, policy, source)
    shutil.rmtree(out_dir, ignore_errors=True)
    return report.messages(), report.note


def _judge(ctx: _Context, res: sandbox.SandboxResult, role: str, compiled: CompileResult) -> Evaluation | None:
    """None when the run passed the task's validator; else its TIMEOUT / RUNTIME_ERROR / INCORRECT verdict."""
    crash = classify_crash(res, None, False)
    passed, why = matches_success(res, ctx.spec)
    ended_badly = res.timed_out or res.returncode is None or res.signal is not None
    if not ended_badly and passed:
        return None
    if crash is not None and (ended_badly or crash.kind not in ("nonzero_exit", "missing_output")):
        # A timeout, a signal, or CUDA's error text in a run that did not pass: the program broke.
        verdict = Verdict.TIMEOUT if crash.kind == "timeout" else Verdict.RUNTIME_ERROR
        crash = replace(crash, stderr_tail=res.output[-4000:])
        return ctx.base(verdict=verdict, kind=role, compile=compiled, crash=crash,
                        reason=f"{crash.kind}: {crash.message}; output: {quote_output(res.output)}")
    return ctx.base(verdict=Verdict.INCORRECT, kind=role, compile=compiled,
                    crash=None, reason=f"the task's validator did not pass: {why}; output: {quote_output(res.output)}")


# ---------------------------------------------------------------- the shipped solution's times (cached)


def folder_hash(spec: MakeTaskSpec) -> str:
    h = hashlib.sha256()
    for path in spec.source_files(spec.precision):
        h.update(path.relative_to(spec.directory).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def baseline_cache(ctx: _Context) -> TimingCache:
    """The shipped solution's cached times: keyed by the task, the GPU model, every task file, the seed and
    the toolchain (the harness owns its repetitions)."""
    o, spec = ctx.options, ctx.spec
    parts = {
        "backend": "make",
        "task": spec.task_id,
        "suite": spec.suite,
        "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "",
        "folder": folder_hash(spec),
        "seed_base": o.seed_base,
        "nvcc": ctx.chain.nvcc_version,
        "arch": ctx.chain.arch,
    }
    return TimingCache(o, f"make-{spec.suite}-{spec.name}", parts, indent=None)


def _baseline_times(ctx: _Context, fresh: bool) -> _Timed | Evaluation:
    spec = ctx.spec
    cache = baseline_cache(ctx)

    def decode(data: dict[str, Any]) -> tuple[tuple[float, float | None], ...] | None:
        cases = tuple((float(k), None if r is None else float(r)) for k, r in data["cases"])
        return cases or None

    cases = None if fresh else cache.load(decode)
    if cases is not None:
        ctx.progress(f"{spec.name}: the shipped solution's times from the cache")
        return _Timed(cases, cached=True)
    shipped = _run_shipped(ctx, "baseline")
    if isinstance(shipped, Evaluation):
        return shipped
    run, _ = shipped
    assert run.result is not None
    times = parse_times(run.result.stdout, spec)
    problem = times_problem(times, spec)
    if problem:
        crash = CrashInfo("harness_error", problem, returncode=run.result.returncode,
                          stderr_tail=run.result.output[-4000:])
        return ctx.base(verdict=Verdict.RUNTIME_ERROR, kind="baseline", compile=run.compile, crash=crash,
                        reason=f"the shipped solution's output does not parse (a task problem, not the "
                               f"candidate's): {problem}; output: {quote_output(run.result.stdout)}")
    cases = tuple((float(k), r) for k, r in times if k is not None)
    if ctx.slowed:  # never cache times the GPU's slowdown spoiled
        return _Timed(cases, cached=False, compile=run.compile)
    cache.store({"task": spec.task_id, "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "",
                 "cases": [list(c) for c in cases]})
    return _Timed(cases, cached=False, compile=run.compile)


STEPS = Steps(context=_Context, candidate=_evaluate, baseline=_baseline, validate=_validate)
evaluate_make, evaluate_make_baseline, validate_make = entry_points(STEPS)
