"""What every engine's evaluation shares, whatever the task format.

The options, and one evaluation's context: the spec, the tools, a scratch folder, progress messages, the
phase clock and the per-GPU lock; `guarded`, which turns a GPU that never frees up into a verdict and
always removes the scratch folder; the baseline-timing cache's folder and its atomic writes. The C/CUDA
format (worker.formats.cuda), the KernelBench format (worker.formats.pytorch) and the task.yaml format
(worker.formats.make) each subclass `EvalContext` with their own steps.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from worker.engine import confine, ncu
from worker.engine import toolchain as tc
from worker.engine.clock import ClockWatch
from worker.engine.gpu_lock import GpuLockTimeout, gpu_lock
from worker.engine.results import Evaluation, Verdict
from worker.engine.scoring import CV_REVIEW
from worker.engine.timing import BATCH_BELOW_MS, ITERS, SEED_BASE, SEEDS, WARMUP, WARMUP_MS

Progress = Callable[[str], None]

REPO_ROOT = Path(__file__).resolve().parents[2]
HARNESS_DIR = REPO_ROOT / "tasks" / "_harness"  # the C/CUDA harness header (kw_harness.cuh)


@dataclass(frozen=True)
class EvalOptions:
    seeds: int = SEEDS
    seed_base: int = SEED_BASE
    warmup: int = WARMUP
    warmup_ms: float = WARMUP_MS
    iters: int = ITERS
    profile: str = "none"  # filtered | full | none
    thresholds: ncu.Thresholds = field(default_factory=ncu.Thresholds.from_env)
    use_baseline_cache: bool = True
    # Baseline times with a CV above this at any size are not cached (nor taken from the cache): measured again by
    # the next evaluation instead of moving every later P (scoring.steady). The evaluator's own review limit.
    cache_max_cv: float = CV_REVIEW
    # C/CUDA: time the candidate and its baseline at the same time, taking turns on the GPU, and divide by that
    # baseline (docs/evaluation.md, "Interleaved timing"). Off: on a 4-GPU H200 host it made P less repeatable
    # than the baseline timed alone and cached (docs/benchmarks.md, "Repeatability").
    interleave: bool = False
    # C/CUDA: sizes whose baseline call takes less than this (ms) are timed in batches of launches, the same
    # number for the baseline and every candidate, decided once from the baseline's cached per-call time
    # (docs/evaluation.md, "Batching short calls"). 0: off.
    batch_below_ms: float = BATCH_BELOW_MS
    # C/CUDA: queued samples (docs/evaluation.md, "Timing protocol"): the calls queued behind a spacer kernel
    # instead of a device-wide synchronize after each, for a candidate whose work stream 0 orders. Opt-in until
    # the GPU tests have passed with it (docs/gpu-validation.md).
    queued_timing: bool = False
    check_timeout_s: float = 180.0
    time_timeout_s: float = 600.0
    profile_timeout_s: float = 600.0
    memcheck_timeout_s: float = 900.0
    compile_timeout_s: float = 300.0
    lock_timeout_s: float = 3600.0
    harness_dir: str = str(HARNESS_DIR)
    build_cache: str | None = None  # None: KW_BUILD_CACHE or ~/.cache/kernelweb/build
    timing_cache: str | None = None  # None: KW_TIMING_CACHE or ~/.cache/kernelweb/baseline-times
    lock_dir: str | None = None
    keep_work_dir: bool = False
    # KernelBench (pytorch) tasks: where the modules run ("cpu" only in tests of the protocol on a
    # machine without a GPU), correctness trials, and whether torch.compile is timed as the expert reference.
    torch_device: str = "cuda"
    torch_trials: int = 5
    torch_compile: bool = False


# The timing protocols a run may choose (docs/evaluation.md, "Timing protocol"): synchronized, the default, or
# queued (EvalOptions.queued_timing).
TIMING_PROTOCOLS = ("synchronized", "queued")
SLOWED_FLAG = "GPU slowed while timed"  # a review flag: times kept from a second slowed timing (timed())
RETIME_PAUSE_S = 1.0  # before timing again after a slowdown: nvbench waits for the clock to recover too


def with_timing_protocol(options: EvalOptions, protocol: str) -> EvalOptions:
    """`options` timed by the named protocol: "queued" sets queued_timing, "synchronized" clears it."""
    if protocol not in TIMING_PROTOCOLS:
        raise ValueError(f"timing protocol must be one of {TIMING_PROTOCOLS}, not {protocol!r}")
    return replace(options, queued_timing=protocol == "queued")


T = TypeVar("T")


def _quiet(_: str) -> None:
    pass


class EvalContext:
    """One evaluation: its spec and precision, options, tools, scratch folder, progress and phase clock."""

    scratch_prefix = "kw"

    def __init__(
        self,
        spec: Any,
        precision: str,
        options: EvalOptions | None,
        chain: tc.Toolchain | None,
        work_dir: Path | str | None,
        progress: Progress | None,
    ):
        self.spec, self.precision = spec, precision
        self.options = options or EvalOptions()
        self.chain = chain or tc.detect()
        self.progress = progress or _quiet
        self.phases: dict[str, float] = {}
        self._own_dir = work_dir is None
        self.work = Path(work_dir) if work_dir else Path(
            tempfile.mkdtemp(prefix=f"{self.scratch_prefix}-{spec.name}-"))
        self.work.mkdir(parents=True, exist_ok=True)
        self.started = time.monotonic()
        self.slowed: dict[str, str] = {}  # timing phases the GPU's slowdown spoiled twice: what to say (timed())
        self.retimed: list[str] = []  # timing phases timed again after a slowdown
        self._gpu_held = False  # gpu() is held by this evaluation now

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.monotonic() - start

    def timed(self, phase: str, what: str, run: Callable[[], T], failed: Callable[[T], bool] | None = None) -> T:
        """A timing process run under the clock watch (worker.engine.clock), in `phase`: run once more when the
        GPU slowed itself down during it. A second slowed run is kept, and the evaluation's notes say so (base()).
        A run that `failed` (a crash, a wrong timed call) is kept whatever the clock did: the retry times again, it
        never gives a candidate a second chance at a check (which a candidate could ask for by burning power).
        """
        gpu = self.chain.gpu
        for attempt in (1, 2):
            # Inside the GPU's lock: the readings are of this timing, not of another evaluation's work before it.
            with self.phase(phase), self.gpu(), ClockWatch(gpu.smi_id if gpu else None) as watch:
                result = run()
            report = watch.report
            if report is None or not report.throttled or (failed is not None and failed(result)):
                return result
            if attempt == 1:
                self.retimed.append(f"{what} was timed again: {report.sentence()} during its first timing")
                self.progress(f"{self.spec.name}/{self.precision}: {report.sentence()}; timing {what} again")
                time.sleep(RETIME_PAUSE_S)
        # A call that itself draws the GPU to its power limit is capped every time it runs long enough (spmm_csr's
        # largest size on an H100, docs/benchmarks.md): its capped times then repeat, and are its speed on this GPU.
        meaning = ("the call may itself draw the GPU to its power limit, and then these capped times are its speed"
                   if report.power_capped else "its times are slower than this GPU's own")
        self.slowed[what] = (f"{what}: {report.sentence()} during its timing, and again when timed once more; "
                             f"{meaning} (docs/evaluation.md, \"The GPU's clock\")")
        return result

    @contextmanager
    def gpu(self) -> Iterator[None]:
        """Hold this GPU's lock (every harness run does; compiles never do); the wait counts as lock_wait. Held
        already by this evaluation (timed() holds it around its clock watch), it is held on, not taken again: an
        flock taken twice by one process through two opens would wait for itself."""
        if self._gpu_held:
            yield
            return
        key = self.chain.gpu.lock_key if self.chain.gpu else "cpu"
        with gpu_lock(key, self.options.lock_dir, self.options.lock_timeout_s) as waited:
            self.phases["lock_wait"] = self.phases.get("lock_wait", 0.0) + waited
            self._gpu_held = True
            try:
                yield
            finally:
                self._gpu_held = False

    def cleanup(self) -> None:
        if self._own_dir and not self.options.keep_work_dir:
            shutil.rmtree(self.work, ignore_errors=True)

    def evaluation_fields(self) -> dict[str, Any]:
        """What an engine reports about its protocol in every Evaluation (seeds, iterations, toolchain)."""
        return {"seeds": self.options.seeds, "iters": self.options.iters, "toolchain": self.chain.describe()}

    def base(self, **fields: Any) -> Evaluation:
        self.phases["total"] = time.monotonic() - self.started
        note = confine.evaluation_note()  # never silently unconfined (docs/threat-model.md)
        clock = [*self.retimed, *self.slowed.values()]  # never a time the GPU's own slowdown spoiled, unsaid
        fields["notes"] = (*fields.get("notes", ()), *clock, *([note] if note else []))
        if self.slowed:
            fields["flags"] = (*fields.get("flags", ()), SLOWED_FLAG)
        return Evaluation(
            task=self.spec.name,
            precision=self.precision,
            gpu=self.chain.gpu.name if self.chain.gpu else "",
            phases=dict(self.phases),
            **{**self.evaluation_fields(), **fields},
        )


def guarded(ctx: EvalContext, kind: str, steps: Callable[[], Evaluation]) -> Evaluation:
    """Run an entry point's steps: a GPU that never frees up is a timeout verdict; scratch is always removed."""
    try:
        return steps()
    except GpuLockTimeout as exc:
        return ctx.base(verdict=Verdict.TIMEOUT, kind=kind, reason=f"the GPU stayed busy: {exc}")
    finally:
        ctx.cleanup()
