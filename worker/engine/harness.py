"""Run the harness executable (docs/task-format.md) and read what happened.

The harness writes its JSON only to --out; exit code 0 means that JSON is
complete. Anything else is a crash, classified here from the JSON `error`,
the exit status and stderr, in that order of trust.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from worker.engine import confine, sandbox
from worker.engine.gpu_lock import cpu_claim
from worker.engine.results import CrashInfo
from worker.engine.timing import ITERS, SEED_BASE, SEEDS, WARMUP, WARMUP_MS

# CUDA error text (cudaGetErrorString) and enum names -> crash kind.
CUDA_ERRORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # A store far outside every allocation can surface as an address-space error instead of an
    # illegal address (seen on an H200, 2026-11-22): both are invalid memory accesses.
    ("illegal_address", ("illegal memory access", "cudaErrorIllegalAddress", "cudaErrorInvalidAddressSpace")),
    ("misaligned_address", ("misaligned address", "cudaErrorMisalignedAddress")),
    ("launch_failure", ("unspecified launch failure", "cudaErrorLaunchFailure")),
    ("out_of_resources", ("too many resources requested", "cudaErrorLaunchOutOfResources")),
    ("invalid_configuration", ("invalid configuration argument", "cudaErrorInvalidConfiguration")),
    ("device_assert", ("device-side assert", "cudaErrorAssert")),
    ("illegal_instruction", ("illegal instruction", "cudaErrorIllegalInstruction")),
    ("out_of_memory", ("out of memory", "cudaErrorMemoryAllocation")),
    ("launch_timeout", ("launch timed out", "cudaErrorLaunchTimeout")),
    ("no_kernel_image", ("no kernel image is available", "cudaErrorNoKernelImageForDevice")),
    ("invalid_argument", ("invalid argument", "cudaErrorInvalidValue")),
)
class HarnessSpec(Protocol):
    """What harness_argv reads of a C/CUDA task's spec."""

    constants: dict[str, float]

    def tolerance(self, precision: str) -> Any: ...


SIGNALS = {
    signal.SIGSEGV: "host_segfault",
    signal.SIGBUS: "host_bus_error",
    signal.SIGFPE: "host_fpe",
    signal.SIGABRT: "abort",
    signal.SIGILL: "host_illegal_instruction",
    signal.SIGKILL: "killed",
    signal.SIGXCPU: "cpu_time_limit",
    signal.SIGXFSZ: "file_size_limit",
}


@dataclass(frozen=True)
class HarnessRun:
    mode: str
    impl: str
    data: dict[str, Any] | None  # the --out JSON when complete
    result: sandbox.SandboxResult
    crash: CrashInfo | None

    @property
    def ok(self) -> bool:
        return self.crash is None and self.data is not None


def format_size(params: dict[str, float]) -> str:
    return ",".join(f"{k}={int(v) if float(v).is_integer() else repr(float(v))}" for k, v in params.items())


def harness_argv(
    exe: str,
    spec: HarnessSpec,
    precision: str,
    mode: str,
    impl: str,
    sizes: list[dict[str, float]],
    out: str,
    *,
    seeds: int = SEEDS,
    seed_base: int = SEED_BASE,
    warmup: int = WARMUP,
    warmup_ms: float = WARMUP_MS,
    iters: int = ITERS,
    evidence_fd: int | None = None,
    turn_fds: tuple[int, int] | None = None,
    batches: list[int] | None = None,
    queued: bool = False,
    lockdown: bool = False,
    library: str | None = None,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """kwbench's command line (docs/task-format.md). `extra`: more flags as given, before `--out` (the bench
    scripts' experiments with kwbench's own flags, e.g. `--l2-flush-mode read`; the evaluator passes none)."""
    argv = [exe, "--mode", mode, "--impl", impl]
    if lockdown:  # kw_lockdown.h once CUDA is up (docs/threat-model.md, "Lockdown")
        argv += ["--lockdown", "1"]
    if library:  # the candidate's shared object, loaded after the lockdown (kw_candidate.h)
        argv += ["--candidate", library]
    for size in sizes:
        argv += ["--size", format_size(size)]
    for name, value in spec.constants.items():
        argv += ["--const", format_size({name: value})]
    if evidence_fd is not None:  # outputs / compare: the pipe between the candidate's and the reference's process
        argv += ["--evidence-fd", str(evidence_fd)]
    if turn_fds is not None:  # interleaved timing: this process's turns (wait on the first, hand back on the second)
        argv += ["--turn-fds", f"{turn_fds[0]},{turn_fds[1]}"]
    if mode in ("validate", "check", "outputs", "compare"):
        tol = spec.tolerance(precision)
        argv += [
            "--seeds",
            str(seeds),
            "--seed-base",
            str(seed_base),
            "--atol",
            repr(tol.atol),
            "--rtol",
            repr(tol.rtol),
        ]
    elif mode == "time":
        # The tolerance too: every timed call's output is compared with the baseline's (kw_timed.cuh).
        tol = spec.tolerance(precision)
        argv += ["--seed-base", str(seed_base), "--warmup", str(warmup), "--warmup-ms", repr(warmup_ms),
                 "--iters", str(iters), "--atol", repr(tol.atol), "--rtol", repr(tol.rtol)]
        if batches and any(b > 1 for b in batches):  # batched timing, decided once per task and size
            argv += ["--batch-fixed", ",".join(str(b) for b in batches)]
        if queued:  # queued samples behind a spacer instead of a device-wide synchronize after every call
            argv += ["--queued", "1"]
    else:
        argv += ["--seed-base", str(seed_base)]
    return argv + list(extra) + ["--out", out]


# Failures the harness reports that are not the candidate's doing: never located or memchecked.
SYSTEM_KINDS = frozenset(
    {"bad_args", "no_candidate", "baseline_failed", "harness_error", "no_device", "not_started", "unconfined",
     "lockdown", "candidate_load"}
)


def classify_crash(
    res: sandbox.SandboxResult, data: dict[str, Any] | None, has_output: bool
) -> CrashInfo | None:
    """None when the run completed; otherwise the most specific reason the evidence supports.

    The harness checkpoints its JSON before each risky step (error kind "incomplete" with the
    size, seed and phase), so even a process that died says where; the exit status and stderr
    say why.
    """
    error = (data or {}).get("error")
    if res.returncode == 0 and not res.timed_out and data is not None and not error:
        return None
    err = error if isinstance(error, dict) else {}
    index = err.get("size_index")
    phase = f" (during {err['phase']})" if err.get("phase") else ""
    stderr = res.stderr[-4000:]
    common = {
        "returncode": res.returncode,
        "signal": res.signal,
        "stderr_tail": stderr,
        "size_index": index if isinstance(index, int) else None,
    }
    if res.confinement is not None and res.confinement.refused:
        problems = "; ".join(res.confinement.problems) or "confinement unavailable"
        return CrashInfo("unconfined", f"the worker refused to run it unconfined ({problems}); "
                                       "KW_ALLOW_UNCONFINED=1 allows it", **common)
    if res.timed_out:
        return CrashInfo("timeout", f"killed after the {res.wall_s:.0f} s wall-clock limit{phase}", **common)
    died = err.get("kind") == "incomplete"  # a checkpoint: where it was, not why it stopped
    message = "" if died else str(err.get("message") or error or "")
    evidence = f"{err.get('code') or ''}\n{message}\n{stderr}\n{res.stdout[-2000:]}"
    for kind, needles in CUDA_ERRORS:
        if any(n.lower() in evidence.lower() for n in needles):
            return CrashInfo(kind, (message or _first_line_with(evidence, needles)) + phase, **common)
    if res.signal is not None:
        try:
            name = signal.Signals(res.signal).name
        except ValueError:
            name = f"signal {res.signal}"
        return CrashInfo(SIGNALS.get(res.signal, "signal"), f"the harness died from {name}{phase}", **common)
    if res.returncode is None:
        return CrashInfo("not_started", stderr.strip() or "the harness could not be started", **common)
    if err and not died:
        return CrashInfo(str(err.get("kind") or "cuda_error"), message, **common)
    if res.returncode == 0:
        what = "an unreadable" if has_output else "no"
        return CrashInfo(
            "missing_output", f"exit 0 but {what} result JSON (did the candidate exit early?)", **common
        )
    return CrashInfo("nonzero_exit", f"exit status {res.returncode}{phase}", **common)


_NON_FINITE = re.compile(r"(?<=[:\[,\s])(-?)(nan|inf|infinity)\b(?=\s*[,}\]])", re.IGNORECASE)


def read_result(path: Path) -> dict[str, Any] | None:
    """The harness JSON, or None if unreadable. printf-style non-finite numbers (nan, -inf), which
    are not JSON, are read as NaN/Infinity: a mismatch report must not turn into a crash."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for attempt in (text, _NON_FINITE.sub(_json_non_finite, text)):
        try:
            data = json.loads(attempt)
        except ValueError:
            continue
        return data if isinstance(data, dict) else None
    return None


def _json_non_finite(m: re.Match[str]) -> str:
    if m.group(2).lower() == "nan":
        return "NaN"
    return f"{m.group(1)}Infinity"


def _first_line_with(text: str, needles: tuple[str, ...]) -> str:
    for line in text.splitlines():
        if any(n.lower() in line.lower() for n in needles):
            return line.strip()[:500]
    return ""


# The candidate as a shared object beside the executable, which loads it after the lockdown (KW_LOAD_AFTER_LOCKDOWN;
# the build puts it there, and removes it from a folder whose executable has the candidate linked in).
CANDIDATE_LIBRARY = "candidate.so"


def candidate_library(exe: str | Path) -> str | None:
    """The candidate's shared object beside `exe`, or None when the candidate is linked into it."""
    path = Path(exe).with_name(CANDIDATE_LIBRARY)
    return str(path) if path.is_file() else None


def run_harness(
    exe: str,
    spec: HarnessSpec,
    precision: str,
    mode: str,
    impl: str,
    sizes: list[dict[str, float]],
    work_dir: Path,
    timeout_s: float,
    *,
    prefix: list[str] | None = None,
    name: str | None = None,
    evidence_fd: int | None = None,
    turn_fds: tuple[int, int] | None = None,
    cpus: tuple[int, ...] = (),
    **kwargs: Any,
) -> HarnessRun:
    """One harness process (optionally under a tool given as `prefix`, e.g. compute-sanitizer)."""
    tag = name or f"{mode}-{impl}"
    out = work_dir / f"{tag}.json"
    out.unlink(missing_ok=True)
    lockdown = impl == "candidate" and not prefix and confine.lockdown_enabled()  # a tool needs files and sockets
    library = candidate_library(exe) if impl == "candidate" else None
    argv = [*(prefix or []), *harness_argv(exe, spec, precision, mode, impl, sizes, str(out),
                                           evidence_fd=evidence_fd, turn_fds=turn_fds, lockdown=lockdown,
                                           library=library, **kwargs)]
    # Confined before its first instruction (the candidate linked in, or loaded later): docs/threat-model.md.
    policy = confine.candidate_run(exe, work_dir, tool=prefix[0] if prefix else None,
                                   read=(library,) if library else ())
    res = sandbox.run(argv, work_dir, timeout_s, name=tag, limits=HARNESS_LIMITS, policy=policy,
                      pass_fds=((evidence_fd,) if evidence_fd is not None else ()) + (turn_fds or ()), cpus=cpus)
    data = read_result(out) if out.is_file() else None
    return HarnessRun(mode, impl, data, res, classify_crash(res, data, out.is_file()))


class ChildOutcome(Protocol):
    """One side of a ComparedRun: a HarnessRun, or the KernelBench runner's ChildRun."""

    @property
    def mode(self) -> str: ...

    @property
    def data(self) -> dict[str, Any] | None: ...

    @property
    def crash(self) -> CrashInfo | None: ...

    @property
    def ok(self) -> bool: ...


@dataclass(frozen=True)
class ComparedRun:
    """The check split in two (docs/evaluation.md, "Who decides the verdict"): the candidate's process runs the
    candidate and only sends what its buffers hold; the reference's process, linked without the candidate,
    rebuilds every case, runs the baseline and decides."""

    candidate: ChildOutcome  # mode outputs: no verdict, only where it was if it died
    reference: ChildOutcome  # mode compare: the verdict

    @property
    def failed_side(self) -> str | None:
        """Whose failure the verdict reports when the reference did not decide, in this order, or None when it did:
        'candidate' (its process died on its own; a process that found the pipe closed only saw the reference stop
        first, after deciding or failing), 'evidence' (it sent a short or malformed stream: its fault), 'timeout'
        (the reference ran out of time, waiting for the candidate's buffers as often as not: counted against the
        candidate, as one process's timeout was) or 'reference' (the reference's own failure: a task problem)."""
        cand, ref = self.candidate.crash, self.reference.crash
        if not self.candidate.ok and not (cand is not None and cand.kind == "evidence_closed"):
            return "candidate"
        if self.reference.ok:
            return None
        if ref is not None and ref.kind in EVIDENCE_KINDS:
            return "evidence"
        return "timeout" if ref is not None and ref.kind == "timeout" else "reference"


def phase_name(mode: str) -> str:
    """The evaluation phase a harness mode belongs to, as messages name it: both sides of the split check are
    "check"."""
    return "check" if mode in ("outputs", "compare") else mode


# The reference's errors about the stream it was sent: the candidate's doing, never a task problem.
EVIDENCE_KINDS = frozenset({"evidence_missing", "evidence_invalid"})


def run_compared(
    candidate_exe: str,
    reference_exe: str,
    spec: HarnessSpec,
    precision: str,
    sizes: list[dict[str, float]],
    candidate_dir: Path,
    reference_dir: Path,
    timeout_s: float,
    **kwargs: int,
) -> ComparedRun:
    """The C/CUDA check: `kwbench --mode outputs` and `kwref --mode compare`, each writing only in its own folder,
    so the candidate's process cannot touch the reference's result."""
    return run_joined(
        lambda fd: run_harness(candidate_exe, spec, precision, "outputs", "candidate", sizes, candidate_dir,
                               timeout_s, evidence_fd=fd, **kwargs),
        lambda fd: run_harness(reference_exe, spec, precision, "compare", "baseline", sizes, reference_dir,
                               timeout_s, evidence_fd=fd, **kwargs),
    )


def run_joined(candidate: Callable[[int], ChildOutcome], reference: Callable[[int], ChildOutcome]) -> ComparedRun:
    """Both sides at once, joined by a pipe opened here: `candidate` gets the write end's descriptor, `reference`
    the read end's, each to hand to its own child only (sandbox.run closes it here once the child has it, so a
    side that ends is seen by the other)."""
    read_fd, write_fd = os.pipe()
    with ThreadPoolExecutor(max_workers=2) as pool:
        cand = pool.submit(_released_on_failure, candidate, write_fd)
        ref = pool.submit(_released_on_failure, reference, read_fd)
        return ComparedRun(cand.result(), ref.result())


@dataclass(frozen=True)
class InterleavedRun:
    """Interleaved timing (docs/evaluation.md, "Interleaved timing"): the candidate and, in a process of its own
    that never runs candidate code, the baseline, timed at the same time and taking turns on the GPU, so whatever
    slows the machine down for a while (another tenant of the host, the CPU's clock) slows both alike."""

    candidate: ChildOutcome  # time mode, the candidate: its times and its checked calls
    reference: ChildOutcome  # time mode, the baseline: the times the candidate's are divided into


def run_interleaved(
    candidate_exe: str,
    reference_exe: str,
    spec: HarnessSpec,
    precision: str,
    sizes: list[dict[str, float]],
    candidate_dir: Path,
    reference_dir: Path,
    timeout_s: float,
    *,
    candidate_impl: str = "candidate",
    lock_dir: Path | str | None = None,
    **kwargs: Any,
) -> InterleavedRun:
    """`kwbench --mode time --impl candidate` and `kwref --mode time --impl baseline`, turn by turn, on one CPU."""
    with pair_cpu(lock_dir) as cpus:
        cand, ref = run_in_turns(
            lambda fds: run_harness(candidate_exe, spec, precision, "time", candidate_impl, sizes, candidate_dir,
                                    timeout_s, turn_fds=fds, cpus=cpus, **kwargs),
            lambda fds: run_harness(reference_exe, spec, precision, "time", "baseline", sizes, reference_dir,
                                    timeout_s, turn_fds=fds, cpus=cpus, **kwargs),
        )
    return InterleavedRun(cand, ref)


@contextmanager
def pair_cpu(lock_dir: Path | str | None = None) -> Iterator[tuple[int, ...]]:
    """The one CPU both sides of an interleaved pair run on: on a VM the host's speed changes from CPU to CPU and
    from one second to the next (docs/benchmarks.md, "The host's speed inside one process"), and two processes
    taking turns on one CPU meet the same speed at every turn. Claimed for the pair's whole run (gpu_lock.cpu_claim),
    so the pairs of workers on several GPUs never share one: the CPU this thread last ran on if no other pair holds
    it, else the next free one this process may use; () (no pinning) when every one is held."""
    allowed = sorted(os.sched_getaffinity(0))
    try:
        stat = Path("/proc/thread-self/stat").read_text()
        current = int(stat.rsplit(")", 1)[1].split()[36])  # field 39, "processor"; fields after the name start at 3
    except (OSError, ValueError, IndexError):
        current = allowed[0]
    start = allowed.index(current) if current in allowed else 0
    with cpu_claim(allowed[start:] + allowed[:start], lock_dir) as cpu:
        yield () if cpu is None else (cpu,)


T = TypeVar("T")


def run_in_turns(first: Callable[[tuple[int, int]], T], second: Callable[[tuple[int, int]], T]) -> tuple[T, T]:
    """Two children taking turns: each gets (in, out) descriptors of two pipes opened here, waits for a byte on
    `in` before a turn and writes one to `out` after it; `first` holds the first turn. Each side's descriptors go
    to its own child only (sandbox.run closes them here once it has them), so a side that ends is seen by the
    other as the end of its pipe, and the other runs on alone."""
    to_first_r, to_first_w = os.pipe()
    to_second_r, to_second_w = os.pipe()
    os.write(to_first_w, b"t")  # the first turn
    with ThreadPoolExecutor(max_workers=2) as pool:
        a = pool.submit(_released_on_failure, first, (to_first_r, to_second_w))
        b = pool.submit(_released_on_failure, second, (to_second_r, to_first_w))
        return a.result(), b.result()


def _released_on_failure(side: Callable[[Any], T], fds: Any) -> T:
    """One side of a pair of children joined by pipes. When it raises before handing its descriptors to its child
    (a policy or an argument that could not be built), they are closed here, so the other side sees the pipe's end
    and runs on alone instead of waiting for its timeout. A descriptor is closed only while its number still names
    the pipe it was given as (same inode): once handed over, sandbox.run has closed it and the number may be another
    file's."""
    owned = (fds,) if isinstance(fds, int) else tuple(fds)
    inodes = {fd: os.fstat(fd).st_ino for fd in owned}
    try:
        return side(fds)
    except BaseException:
        for fd, inode in inodes.items():
            try:
                if os.fstat(fd).st_ino == inode:
                    os.close(fd)
            except OSError:
                pass
        raise


# The harness runs untrusted device code: cap its files (JSON + kernel printf) well below the default.
HARNESS_LIMITS = sandbox.Limits(file_bytes=512 * 1024 * 1024, processes=4096, isolate_network=True)

