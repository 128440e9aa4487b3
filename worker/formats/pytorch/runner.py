"""One KernelBench evaluation's context: the torch_harness.py child processes (sandboxed, under the GPU lock
where they use it), their environment, the extension build cache, and the guard every entry point runs in."""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from worker.engine import confine, sandbox
from worker.engine import toolchain as tc
from worker.engine.context import EvalContext, EvalOptions, Progress
from worker.engine.harness import HARNESS_LIMITS, ComparedRun, classify_crash, read_result, run_joined
from worker.engine.results import CompileResult, CrashInfo, Evaluation, SizeResult, Verdict
from worker.formats.pytorch.spec import PyTorchTaskSpec

HARNESS = Path(__file__).with_name("torch_harness.py")
TIMED = HARNESS.with_name("torch_timed.py")  # loaded by the harness by path (python -I: no script folder on sys.path)
VERDICT = HARNESS.with_name("torch_verdict.py")  # likewise: the comparison and the evidence stream

_MiB = 1024 * 1024
# The build runs ninja, g++ and nvcc (cicc, ptxas) under the candidate's import: more files and processes.
BUILD_LIMITS = sandbox.Limits(file_bytes=1024 * _MiB, processes=4096, isolate_network=True)
PROFILE_NOTE = "profile skipped: ncu is not wired for pytorch tasks yet (torch_harness.py --mode profile is)"
STREAM_GAP_REVIEW = 1.5  # synchronized time / current-stream time above this: work escaped the timed stream
# An import that failed only because the build hides the GPU: the check imports it again under the lock.
NO_DEVICE_TEXT = ("no cuda gpus are available", "found no nvidia driver", "cuda driver initialization failed",
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


class TorchContext(EvalContext):
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
            # inductor compiles in a pool of subprocesses by default; the sandbox grants /proc/<pid> (which the
            # CUDA driver needs) to the child it starts, not to processes that child forks later. One thread:
            # every compile in the confined child itself (unverified on a GPU: docs/gpu-validation.md).
            env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        return env

    def confinement(self, mode: str, env: dict[str, str], folder: Path, *, hide_gpu: bool,
                    tool: str | None) -> confine.Policy | None:
        """The child's confinement (docs/threat-model.md). Read-only: the system, the worker's Python and its
        packages, the task folder and the harness; writable: the scratch folder and the extension (and
        torch.compile) caches. load_inline re-checks its build with ninja and the compiler in every fresh
        process, so every mode may start the toolchain's programs; no network, no /proc/self, no other
        processes' files, memory or signals."""
        reads = tuple(dict.fromkeys((sys.prefix, sys.base_prefix, str(HARNESS), str(TIMED), str(VERDICT),
                                     str(self.spec.directory.resolve()))))
        writes = tuple(env[k] for k in ("TORCH_EXTENSIONS_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
                       if k in env)
        for cache in writes:
            Path(cache).mkdir(parents=True, exist_ok=True)
        execute = (*confine.SYSTEM_PATHS, sys.prefix, sys.base_prefix)  # the interpreter may live outside /usr
        if mode == "build":
            return confine.build_policy(folder, read=reads + (str(self.work),), write=writes, execute=execute)
        return confine.candidate_run(sys.executable, folder, read=reads + (str(self.work),), write=writes,
                                     execute=execute,
                                     processes=True, gpu=self.device == "cuda" and not hide_gpu, tool=tool)

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
        evidence_fd: int | None = None,
    ) -> ChildRun:
        o, tol = self.options, self.spec.tolerance(self.precision)
        tag = name or f"{mode}-{impl}"
        # The Model's processes and ModelNew's each write only in their own folder: candidate code can rewrite
        # neither the verdict nor a reference time.
        folder = self.work / ("reference" if impl in ("model", "compile") else "candidate")
        folder.mkdir(parents=True, exist_ok=True)
        out = folder / f"{tag}.json"
        out.unlink(missing_ok=True)
        argv = [
            *(prefix or []), sys.executable, "-I", "-B", str(HARNESS), "--mode", mode,
            "--task-dir", str(self.spec.directory.resolve()), "--model", self.spec.model_file, "--impl", impl,
            "--precision", self.precision, "--device", self.device, "--seed-base", str(o.seed_base),
            "--trials", str(trials or o.torch_trials), "--warmup", str(o.warmup), "--warmup-ms", repr(o.warmup_ms),
            "--iters", str(o.iters),
            "--atol", repr(tol.atol), "--rtol", repr(tol.rtol), "--out", str(out), *(extra or []),
        ]
        if evidence_fd is not None:
            argv += ["--evidence-fd", str(evidence_fd)]
        if self.candidate_path is not None and mode != "compare":  # the reference's side never sees the candidate
            argv += ["--candidate", str(self.candidate_path)]
        cpus = os.cpu_count() or 2
        base = BUILD_LIMITS if mode == "build" else HARNESS_LIMITS
        # RLIMIT_CPU counts every thread: a CPU-side torch op on all cores must not trip it before the wall clock.
        limits = replace(base, cpu_seconds=int(timeout_s * max(2, cpus)) + 10)
        env = self.env(hide_gpu=hide_gpu, compile_cache=impl == "compile")

        policy = self.confinement(mode, env, folder, hide_gpu=hide_gpu, tool=prefix[0] if prefix else None)

        def run() -> sandbox.SandboxResult:
            return sandbox.run(argv, folder, timeout_s, env_extra=env, limits=limits, name=tag, policy=policy,
                               pass_fds=(evidence_fd,) if evidence_fd is not None else ())

        if lock:
            with self.gpu():
                res = run()
        else:
            res = run()
        data = read_result(out) if out.is_file() else None
        return ChildRun(mode, data, res, _crash_of(res, data, out.is_file()))


    def compared(self, timeout_s: float) -> ComparedRun:
        """The check split in two (docs/evaluation.md, "Who decides the verdict"): ModelNew's process sends what
        it returned and left in its inputs over a pipe opened here; the Model's process, which never imports the
        candidate, decides. One GPU lock for both."""
        with self.gpu():
            return run_joined(
                lambda fd: self.child("outputs", timeout_s, lock=False, evidence_fd=fd),
                lambda fd: self.child("compare", timeout_s, impl="model", lock=False, evidence_fd=fd),
            )


def _arch_list(chain: tc.Toolchain) -> str:
    """TORCH_CUDA_ARCH_LIST for the build: the GPU's compute capability, else the toolchain's target arch."""
    if chain.gpu and chain.gpu.compute_capability:
        return chain.gpu.compute_capability
    digits = re.sub(r"\D", "", chain.arch) or "90"
    return f"{digits[:-1]}.{digits[-1]}"


def precheck(ctx: TorchContext, kind: str) -> Evaluation | None:
    """This format's own checks before any step: the precision exists, PyTorch is installed."""
    if ctx.precision not in ctx.spec.precisions:
        return ctx.base(verdict=Verdict.REJECTED, kind=kind,
                        reason=f"{ctx.spec.name} has no {ctx.precision} variant ({', '.join(ctx.spec.precisions)})")
    if not torch_version():
        failure = CompileResult("harness", False, "import torch", f"PyTorch is not installed for {sys.executable}")
        return ctx.base(verdict=Verdict.COMPILE_ERROR, kind=kind, compile=failure,
                        reason="PyTorch is not installed in the worker's Python: pytorch tasks need it "
                               "(a worker problem, not the candidate's)")
    return None


def missing_gpu(ctx: TorchContext) -> str | None:
    if ctx.device == "cuda" and ctx.chain.gpu is None:
        return f"this run needs a GPU and none is present ({ctx.chain.gpu_reason})"
    return None
