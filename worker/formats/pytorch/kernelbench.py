"""KernelBench ("pytorch") tasks: the evaluation (the spec is in spec.py, the static checks in checks.py).

The model file and the candidate are only ever read statically here (ast): this module imports
neither torch nor the task's code. Everything that runs them goes through `worker/formats/pytorch/torch_harness.py`
in a sandboxed child process (DESIGN §8):

    static checks -> build (imports the candidate: load_inline compiles; no GPU lock, GPU hidden)
    -> check (trials x seeds, poisoned allocator, inputs unchanged) under the GPU lock
    -> time eager Model (cached), ModelNew and optionally torch.compile(Model) -> score -> flags

The entry points take the same arguments as worker.formats.cuda.evaluation's and return an `Evaluation`; nothing
here raises for a bad candidate.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from worker.engine import sandbox
from worker.engine import toolchain as tc
from worker.engine.context import EvalContext, EvalOptions, Progress, guarded, timing_cache_dir, write_json_atomic
from worker.engine.harness import HARNESS_LIMITS, classify_crash, read_result
from worker.engine.results import CompileResult, CrashInfo, Evaluation, SizeResult, TimingStats, Verdict
from worker.engine.scoring import score_sizes
from worker.formats.pytorch.checks import check_candidate
from worker.formats.pytorch.spec import PyTorchTaskSpec

HARNESS = Path(__file__).with_name("torch_harness.py")
_MiB = 1024 * 1024
# The build runs ninja, g++ and nvcc (cicc, ptxas) under the candidate's import: more files and processes.
BUILD_LIMITS = sandbox.Limits(file_bytes=1024 * _MiB, processes=4096, isolate_network=True)
PROFILE_NOTE = "profile skipped: ncu is not wired for pytorch tasks yet (torch_harness.py --mode profile is)"
STREAM_GAP_REVIEW = 1.5  # synchronized time / current-stream time above this: work escaped the timed stream
# An import that failed only because the build hides the GPU: the check imports it again under the lock.
_NO_DEVICE_TEXT = ("no cuda gpus are available", "found no nvidia driver", "cuda driver initialization failed",
                   "no kernel image", "cudaerrornodevice", "invalid device ordinal")


def torch_version() -> str:
    """PyTorch's version in the worker's Python, read without importing torch ('' when absent)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return ""


def extension_cache_root(options: EvalOptions) -> Path:
    base = options.build_cache or os.environ.get("KW_BUILD_CACHE")
    return Path(base) / "torch-extensions" if base else Path.home() / ".cache" / "kernelweb" / "torch-extensions"


def candidate_build_key(source: str, device: str, arch_list: str) -> str:
    """The extension cache folder of a candidate: a hash of every literal in it (its C++/CUDA sources, the
    extension's name and flags), the device, the arch list and torch. Candidates that differ only in Python
    share a build; different sources never share a folder, so concurrent evaluations cannot load each
    other's library (torch versions a rebuilt extension per process only)."""
    try:
        literals = [repr(n.value) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant)]
    except SyntaxError:
        literals = [source]
    parts = {"literals": literals, "device": device, "arch": arch_list, "torch": torch_version()}
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class ChildRun:
    """One torch_harness.py process: its JSON (when complete) and why it failed, if it did."""

    mode: str
    data: dict[str, Any] | None
    result: sandbox.SandboxResult
    crash: CrashInfo | None

    @property
    def ok(self) -> bool:
        return self.crash is None and self.data is not None


def _crash_of(res: sandbox.SandboxResult, data: dict[str, Any] | None, has_output: bool) -> CrashInfo | None:
    """worker.engine.harness.classify_crash on this harness's JSON: a checkpoint says where it died, an error
    JSON what Python raised (CUDA errors are recognised from its text)."""
    error = data.get("error") if data is not None else None
    if data is None:
        adapted = None
    elif data.get("incomplete"):
        adapted = {"error": {"kind": "incomplete", "phase": data.get("phase")}}
    elif isinstance(error, str) and error:
        phase = f" (during {data['phase']})" if data.get("phase") else ""
        adapted = {"error": {"kind": data.get("kind") or "python_exception", "message": error + phase}}
    else:
        adapted = {k: v for k, v in data.items() if k != "error"}  # a complete result
    crash = classify_crash(res, adapted, has_output)
    if crash is not None and data and data.get("traceback"):
        crash = replace(crash, stderr_tail=(data["traceback"][-3000:] + "\n" + res.stderr[-3000:]).strip())
    return replace(crash, size_index=0) if crash is not None else None


class _Context(EvalContext):
    """A KernelBench evaluation: where the modules run, the candidate file, its extension folder, the arch list."""

    def __init__(
        self,
        spec: PyTorchTaskSpec,
        precision: str,
        options: EvalOptions | None,
        chain: tc.Toolchain | None,
        work_dir: Path | str | None,
        progress: Progress | None,
    ):
        super().__init__(spec, precision, options, chain, work_dir, progress)
        self.device = self.options.torch_device
        self.candidate_path: Path | None = None
        self.extensions_dir: Path | None = None
        self.arch_list = _arch_list(self.chain) if self.device == "cuda" else ""

    def evaluation_fields(self) -> dict[str, Any]:
        return {"seeds": self.options.torch_trials, "iters": self.options.iters,
                "toolchain": {**self.chain.describe(), "torch": torch_version() or "missing",
                              "torch_device": self.device}}

    def size(self, **fields: Any) -> SizeResult:
        params = dict(self.spec.sizes[0]) if self.spec.sizes else {}
        return SizeResult(0, params, self.spec.complexity_of(params), **fields)

    def env(self, *, hide_gpu: bool = False, compile_cache: bool = False) -> dict[str, str]:
        # ninja lives beside the worker's Python (a venv's bin); torch's JIT build runs it from PATH.
        env = {"PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "/usr/bin:/bin")])}
        if self.extensions_dir is not None:
            env["TORCH_EXTENSIONS_DIR"] = str(self.extensions_dir)
        if self.arch_list:
            env["TORCH_CUDA_ARCH_LIST"] = self.arch_list  # the same in every step, so the check never rebuilds
        if self.chain.nvcc:
            env["CUDA_HOME"] = str(Path(self.chain.nvcc).resolve().parent.parent)
        if hide_gpu:
            env["CUDA_VISIBLE_DEVICES"] = ""  # the build never holds the GPU lock, so it may not use the GPU
        if compile_cache:
            root = extension_cache_root(self.options).parent
            env["TORCHINDUCTOR_CACHE_DIR"] = str(root / "torchinductor")
            env["TRITON_CACHE_DIR"] = str(root / "triton")
        return env

    def child(
        self,
        mode: str,
        timeout_s: float,
        *,
        impl: str = "candidate",
        name: str | None = None,
        lock: bool = True,
        hide_gpu: bool = False,
        prefix: list[str] | None = None,
        trials: int | None = None,
        extra: list[str] | None = None,
    ) -> ChildRun:
        o, tol = self.options, self.spec.tolerance(self.precision)
        tag = name or f"{mode}-{impl}"
        out = self.work / f"{tag}.json"
        out.unlink(missing_ok=True)
        argv = [
            *(prefix or []), sys.executable, "-I", "-B", str(HARNESS), "--mode", mode,
            "--task-dir", str(self.spec.directory.resolve()), "--model", self.spec.model_file, "--impl", impl,
            "--precision", self.precision, "--device", self.device, "--seed-base", str(o.seed_base),
            "--trials", str(trials or o.torch_trials), "--warmup", str(o.warmup), "--iters", str(o.iters),
            "--atol", repr(tol.atol), "--rtol", repr(tol.rtol), "--out", str(out), *(extra or []),
        ]
        if self.candidate_path is not None:
            argv += ["--candidate", str(self.candidate_path)]
        cpus = os.cpu_count() or 2
        base = BUILD_LIMITS if mode == "build" else HARNESS_LIMITS
        # RLIMIT_CPU counts every thread: a CPU-side torch op on all cores must not trip it before the wall clock.
        limits = replace(base, cpu_seconds=int(timeout_s * max(2, cpus)) + 10)
        env = self.env(hide_gpu=hide_gpu, compile_cache=impl == "compile")

        def run() -> sandbox.SandboxResult:
            return sandbox.run(argv, self.work, timeout_s, env_extra=env, limits=limits, name=tag)

        if lock:
            with self.gpu():
                res = run()
        else:
            res = run()
        data = read_result(out) if out.is_file() else None
        return ChildRun(mode, data, res, _crash_of(res, data, out.is_file()))


def _arch_list(chain: tc.Toolchain) -> str:
    """TORCH_CUDA_ARCH_LIST for the build: the GPU's compute capability, else the toolchain's target arch."""
    if chain.gpu and chain.gpu.compute_capability:
        return chain.gpu.compute_capability
    digits = re.sub(r"\D", "", chain.arch) or "90"
    return f"{digits[:-1]}.{digits[-1]}"


def _guarded(ctx: _Context, kind: str, steps: Callable[[], Evaluation]) -> Evaluation:
    """The shared guard (worker.engine.context.guarded), after two checks of this backend's own."""

    def checked() -> Evaluation:
        if ctx.precision not in ctx.spec.precisions:
            return ctx.base(verdict=Verdict.REJECTED, kind=kind,
                            reason=f"{ctx.spec.name} has no {ctx.precision} variant ({', '.join(ctx.spec.precisions)})")
        if not torch_version():
            failure = CompileResult("harness", False, "import torch", f"PyTorch is not installed for {sys.executable}")
            return ctx.base(verdict=Verdict.COMPILE_ERROR, kind=kind, compile=failure,
                            reason="PyTorch is not installed in the worker's Python: pytorch tasks need it "
                                   "(a worker problem, not the candidate's)")
        return steps()

    return guarded(ctx, kind, checked)


def _no_gpu(ctx: _Context) -> str | None:
    if ctx.device == "cuda" and ctx.chain.gpu is None:
        return f"this run needs a GPU and none is present ({ctx.chain.gpu_reason})"
    return None


# ---------------------------------------------------------------- public entry points


def evaluate_pytorch(
    spec: PyTorchTaskSpec,
    precision: str,
    candidate_source: str,
    flags: str | None = None,
    options: EvalOptions | None = None,
    *,
    compile_only: bool = False,
    chain: tc.Toolchain | None = None,
    work_dir: Path | str | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """A candidate ModelNew against the task's Model: static checks, build, check, time, score."""
    ctx = _Context(spec, precision, options, chain, work_dir, progress)
    return _guarded(ctx, "candidate", lambda: _evaluate(ctx, candidate_source, flags, compile_only))


def evaluate_pytorch_baseline(
    spec: PyTorchTaskSpec,
    precision: str,
    options: EvalOptions | None = None,
    *,
    chain: tc.Toolchain | None = None,
    work_dir: Path | str | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """Round 0: time the eager Model alone (and torch.compile(Model) where asked)."""
    ctx = _Context(spec, precision, options, chain, work_dir, progress)
    return _guarded(ctx, "baseline", lambda: _evaluate_baseline(ctx))


def validate_pytorch(
    spec: PyTorchTaskSpec,
    precision: str,
    options: EvalOptions | None = None,
    *,
    chain: tc.Toolchain | None = None,
    work_dir: Path | str | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """Is the task's Model a usable reference (kind='validate')? It must run at the task's shapes, give the
    same output twice under one seed (within the tolerance; bitwise is noted), give finite outputs, and agree
    with a float64 run on the CPU within the tolerance. That last run is skipped, with a note, when it does
    not finish within options.check_timeout_s or the outputs exceed 256 MiB: a CPU float64 pass over a large
    convolution can take far longer than the GPU work it checks."""
    ctx = _Context(spec, precision, options, chain, work_dir, progress)
    return _guarded(ctx, "validate", lambda: _validate(ctx))


# ---------------------------------------------------------------- the steps


def _evaluate(ctx: _Context, source: str, flags: str | None, compile_only: bool) -> Evaluation:
    spec, precision, o = ctx.spec, ctx.precision, ctx.options
    notes: list[str] = []
    if flags and flags.strip():
        notes.append("compiler flags are ignored for pytorch tasks: a candidate passes its own through "
                     "load_inline(extra_cflags=..., extra_cuda_cflags=...)")
    report = check_candidate(source, spec)
    if not report.ok:
        msgs = report.messages()
        return ctx.base(verdict=Verdict.REJECTED, static_violations=msgs, notes=tuple(notes),
                        reason=msgs[0] + (f" (+{len(msgs) - 1} more)" if len(msgs) > 1 else ""))

    ctx.candidate_path = ctx.work / "candidate.py"
    ctx.candidate_path.write_text(source, encoding="utf-8")
    ctx.extensions_dir = extension_cache_root(o) / candidate_build_key(source, ctx.device, ctx.arch_list)
    ctx.extensions_dir.mkdir(parents=True, exist_ok=True)
    built = _build(ctx, notes)
    if isinstance(built, Evaluation):
        no_gpu = _no_gpu(ctx)
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
    no_gpu = _no_gpu(ctx)
    if no_gpu:
        return ctx.base(verdict=Verdict.NO_GPU, reason=no_gpu, compile=built, notes=tuple(notes))

    ctx.progress(f"{spec.name}/{precision}: check ModelNew against Model ({o.torch_trials} seeded trials)")
    with ctx.phase("check"):
        run = ctx.child("check", o.check_timeout_s)
    if not run.ok:
        return _crashed(ctx, run, compile=built, notes=notes)
    checked = _checked_size(ctx, run.data or {})
    if not checked.correct:
        return ctx.base(verdict=Verdict.INCORRECT, reason=_mismatch_reason(ctx, checked), sizes=(checked,),
                        compile=built, notes=tuple(notes))

    baseline, cached = _times(ctx, "model")
    if isinstance(baseline, Evaluation):
        return replace(baseline, kind="candidate", compile=built, notes=tuple(notes) + baseline.notes)
    ctx.progress(f"{spec.name}/{precision}: time ModelNew ({o.warmup} warm-up + {o.iters} timed calls)")
    with ctx.phase("time"):
        run = ctx.child("time", o.time_timeout_s)
    if not run.ok:
        return _crashed(ctx, run, compile=built, notes=notes, sizes=(checked,))
    data = run.data or {}
    candidate = TimingStats.from_dict(data["timing"])
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


def _build(ctx: _Context, notes: list[str]) -> CompileResult | Evaluation:
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
        if ctx.device == "cuda" and any(t in error.lower() for t in _NO_DEVICE_TEXT):
            notes.append("the candidate uses the GPU at import time; it was imported again under the GPU lock")
            return CompileResult("candidate", True, command, log, seconds=res.wall_s)
        return ctx.base(verdict=Verdict.COMPILE_ERROR, compile=failure, notes=tuple(notes),
                        reason=f"the candidate module failed to import: {error.splitlines()[0] if error else '?'}")
    crash = run.crash or CrashInfo("missing_output", "the build reported nothing")
    failure = CompileResult("candidate", False, command, output, seconds=res.wall_s)
    return ctx.base(verdict=Verdict.RUNTIME_ERROR, compile=failure, crash=crash, notes=tuple(notes),
                    reason=f"{crash.kind} while importing the candidate: {crash.message}")


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if re.search(r"\berror\b", line, re.IGNORECASE) and "Error building extension" not in line:
            return line.strip()[:500]
    return next((ln.strip()[:500] for ln in text.splitlines() if ln.strip()), "")


def _checked_size(ctx: _Context, data: dict[str, Any]) -> SizeResult:
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


def _mismatch_reason(ctx: _Context, size: SizeResult) -> str:
    m = size.first_mismatch or {}
    where = f"trial {m.get('trial')} (seed {m.get('seed')})" if "trial" in m else "the check"
    if size.inputs_unchanged is False:
        return f"at {where} the candidate modified its inputs: {size.changed_input}"
    if "index" in m:
        position = "[" + ", ".join(str(p) for p in m.get("position", [m.get("index")])) + "]"
        return (
            f"at {where}: {m.get('output')}{position} expected {_g(m.get('expected'))} got {_g(m.get('got'))}; "
            f"{m.get('mismatches')} of {m.get('total')} elements out of tolerance "
            f"(atol={m.get('atol')}, rtol={m.get('rtol')})"
        )
    return f"at {where}: {m.get('output', 'output')} {m.get('error') or 'is out of tolerance'}"


def _g(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _crashed(
    ctx: _Context,
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
        reason=f"{who}{crash.kind} during {run.mode}: {crash.message}",
        crash=crash,
        memcheck_log=memcheck,
        sizes=sizes if sizes is not None else (ctx.size(),),
        compile=compile,
        notes=tuple(notes),
    )


def _memcheck(ctx: _Context) -> str:
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


def timing_cache_key(ctx: _Context, impl: str) -> str:
    o = ctx.options
    parts = {
        "backend": "pytorch",
        "task": ctx.spec.name,
        "precision": ctx.precision,
        "impl": impl,
        "device": ctx.device,
        "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "",
        "torch": torch_version(),
        "model": hashlib.sha256(ctx.spec.model_path.read_bytes()).hexdigest(),
        "harness": hashlib.sha256(HARNESS.read_bytes()).hexdigest(),
        "warmup": o.warmup,
        "iters": o.iters,
        "seed_base": o.seed_base,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _times(ctx: _Context, impl: str) -> tuple[TimingStats | Evaluation, bool]:
    """The eager Model's (impl='model') or torch.compile's (impl='compile') timing, from the cache when it
    was measured for this task, precision, GPU model, torch, model file and harness."""
    o = ctx.options
    path = timing_cache_dir(o) / f"{ctx.spec.name}-{ctx.precision}-{impl}-{timing_cache_key(ctx, impl)}.json"
    what = "torch.compile(Model)" if impl == "compile" else "the eager Model"
    if o.use_baseline_cache and path.is_file():
        try:
            stats = TimingStats.from_dict(json.loads(path.read_text(encoding="utf-8"))["timing"])
            ctx.progress(f"{ctx.spec.name}/{ctx.precision}: {what} times from cache")
            return stats, True
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable cache entry: time again
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: time {what} ({o.warmup} warm-up + {o.iters} timed calls)")
    with ctx.phase("time_reference" if impl == "compile" else "time_baseline"):
        run = ctx.child("time", o.time_timeout_s, impl=impl)
    if not run.ok or "timing" not in (run.data or {}):
        who = f"{what} failed while timing (a task problem, not the candidate's): "
        return _crashed(ctx, run, kind="baseline", who=who), False
    stats = TimingStats.from_dict(run.data["timing"])
    write_json_atomic(path, {"task": ctx.spec.name, "precision": ctx.precision, "impl": impl,
                             "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "", "env": run.data.get("env", {}),
                             "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "timing": stats.to_dict()})
    return stats, False


def _reference_times(ctx: _Context, notes: list[str]) -> TimingStats | None:
    """torch.compile(Model) as the expert reference, where the options or the task ask for it; a failure is a
    note, never a verdict."""
    if not (ctx.options.torch_compile or ctx.spec.compare_compile):
        return None
    stats, _ = _times(ctx, "compile")
    if isinstance(stats, Evaluation):
        notes.append(f"no torch.compile reference: {stats.reason}")
        return None
    return stats


def _evaluate_baseline(ctx: _Context) -> Evaluation:
    no_gpu = _no_gpu(ctx)
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


def _validate(ctx: _Context) -> Evaluation:
    o = ctx.options
    no_gpu = _no_gpu(ctx)
    if no_gpu:
        return ctx.base(verdict=Verdict.NO_GPU, kind="validate", reason=no_gpu)
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: validate the reference Model ({o.torch_trials} seeds, twice each)")
    saved = ctx.work / "reference-outputs.pt"
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
