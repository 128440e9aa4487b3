"""The state of one C/CUDA evaluation and the harness processes it starts (worker.formats.cuda.evaluation runs the
steps): the linked executables, the batches and the sample protocol, and each run in the folder of its side."""

from __future__ import annotations

from pathlib import Path

from worker.engine import toolchain as tc
from worker.engine.context import EvalContext, EvalOptions, Progress
from worker.engine.harness import (
    ComparedRun,
    HarnessRun,
    InterleavedRun,
    run_compared,
    run_harness,
    run_interleaved,
)
from worker.engine.results import SizeResult
from worker.formats.cuda.spec import TaskSpec


class CudaContext(EvalContext):
    """A C/CUDA evaluation: the linked harness and the libraries a library reference may link."""

    def __init__(self, spec: TaskSpec, precision: str, options: EvalOptions | None, chain: tc.Toolchain | None,
                 work_dir: Path | str | None, progress: Progress | None):
        super().__init__(spec, precision, options, chain, work_dir, progress)
        self.exe = ""  # the linked harness, once built
        self.reference_exe = ""  # the same harness linked without the candidate: baseline runs and verdicts
        self.trusted_libraries: tuple[str, ...] = ()  # a library reference's own -l libraries
        self.trusted = False  # the task's own library reference: no static checks, no object check
        self.batches: list[int] | None = None  # launches per sample for each size, once the baseline decided them
        # Queued samples (EvalOptions.queued_timing, where stream 0 orders all of the candidate's work:
        # BuildResult.unordered); the baseline beside it is timed alike.
        self.queued = False

    def sizes(self) -> list[SizeResult]:
        return [SizeResult(i, dict(s), self.spec.complexity_of(s)) for i, s in enumerate(self.spec.sizes)]

    def run(
        self,
        mode: str,
        impl: str,
        sizes: list[dict[str, float]],
        timeout_s: float,
        name: str | None = None,
        prefix: list[str] | None = None,
        seeds: int | None = None,
        reference: bool = False,
    ) -> HarnessRun:
        """One harness process; `reference`: the executable without the candidate (its code never runs there)."""
        o = self.options
        with self.gpu():
            return run_harness(
                self.reference_exe if reference else self.exe,
                self.spec,
                self.precision,
                mode,
                impl,
                sizes,
                self.folder(reference),
                timeout_s,
                prefix=prefix,
                name=name,
                seeds=seeds or o.seeds,
                seed_base=o.seed_base,
                warmup=o.warmup,
                warmup_ms=o.warmup_ms,
                iters=o.iters,
                batches=self.batches if mode == "time" else None,
                queued=self.queued,
            )

    def folder(self, reference: bool) -> Path:
        """Where a run may write (its cwd): the candidate's processes and the reference's each have their own, and
        neither holds the executables (build/), so candidate code can rewrite neither kwref nor the verdict."""
        return self.work / ("reference" if reference else "candidate")

    def interleaved(self, sizes: list[dict[str, float]], timeout_s: float) -> InterleavedRun:
        """The timing: the candidate's process and the reference's (the baseline), taking turns on the GPU."""
        o = self.options
        with self.gpu():
            return run_interleaved(self.exe, self.reference_exe, self.spec, self.precision, sizes,
                                   self.folder(False), self.folder(True), timeout_s, seed_base=o.seed_base,
                                   warmup=o.warmup, warmup_ms=o.warmup_ms, iters=o.iters, batches=self.batches,
                                   queued=self.queued, lock_dir=o.lock_dir)

    def compared(self, sizes: list[dict[str, float]], timeout_s: float) -> ComparedRun:
        """The check: the candidate's process sends its buffers, the reference's process decides."""
        o = self.options
        with self.gpu():
            return run_compared(self.exe, self.reference_exe, self.spec, self.precision, sizes, self.folder(False),
                                self.folder(True), timeout_s, seeds=o.seeds, seed_base=o.seed_base)
