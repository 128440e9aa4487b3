"""The three entry points every format offers, written once: evaluate a candidate, time the baseline
(round 0), validate the task itself.

A format supplies `Steps`: how to build its evaluation context and what each entry point does in it. The
engine builds the context, runs the format's pre-check (a precision the task lacks, a missing runtime) and
guards the steps: a GPU that never frees up becomes a timeout verdict, and the scratch folder is always
removed. None of the entry points raises for a bad candidate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from worker.engine import confine
from worker.engine import toolchain as tc
from worker.engine.context import EvalContext, EvalOptions, Progress, guarded
from worker.engine.results import CrashInfo, Evaluation, Verdict


@dataclass(frozen=True)
class Steps:
    context: Callable[..., EvalContext]  # (spec, precision, options, chain, work_dir, progress)
    candidate: Callable[[Any, str, str | None, bool], Evaluation]  # (ctx, source, flags, compile_only)
    baseline: Callable[[Any], Evaluation]
    validate: Callable[[Any], Evaluation]
    precheck: Callable[[Any, str], Evaluation | None] | None = None  # (ctx, kind): a verdict that ends early


class EntryPoints(NamedTuple):
    evaluate: Callable[..., Evaluation]
    evaluate_baseline: Callable[..., Evaluation]
    validate: Callable[..., Evaluation]


def run_steps(steps: Steps, ctx: EvalContext, kind: str, work: Callable[[], Evaluation]) -> Evaluation:
    """`work` in `ctx`, after the format's pre-check, guarded."""

    def checked() -> Evaluation:
        unconfined = confine.unconfined_reason()
        if unconfined and not confine.unconfined_allowed():
            why = (f"this worker cannot confine candidate code ({unconfined}) and refuses to evaluate it "
                   "unconfined (KW_ALLOW_UNCONFINED=1 allows it, and the result then says so); a worker problem, "
                   "not the candidate's")
            return ctx.base(verdict=Verdict.RUNTIME_ERROR, kind=kind, reason=why, crash=CrashInfo("unconfined", why))
        early = steps.precheck(ctx, kind) if steps.precheck else None
        return early or work()

    return guarded(ctx, kind, checked)


def entry_points(steps: Steps) -> EntryPoints:
    """The public evaluate / evaluate_baseline / validate of a format built from its steps."""

    def evaluate(spec: Any, precision: str, candidate_source: str, flags: str | None = None,
                 options: EvalOptions | None = None, *, compile_only: bool = False,
                 chain: tc.Toolchain | None = None, work_dir: Path | str | None = None,
                 progress: Progress | None = None) -> Evaluation:
        """Check, build, time (and profile, where the format can) a candidate against the task's baseline."""
        ctx = steps.context(spec, precision, options or EvalOptions(), chain, work_dir, progress)
        return run_steps(steps, ctx, "candidate", lambda: steps.candidate(ctx, candidate_source, flags, compile_only))

    def evaluate_baseline(spec: Any, precision: str, options: EvalOptions | None = None, *,
                          chain: tc.Toolchain | None = None, work_dir: Path | str | None = None,
                          progress: Progress | None = None) -> Evaluation:
        """Round 0: the task's own baseline, timed (and profiled) alone."""
        ctx = steps.context(spec, precision, options or EvalOptions(), chain, work_dir, progress)
        return run_steps(steps, ctx, "baseline", lambda: steps.baseline(ctx))

    def validate(spec: Any, precision: str, options: EvalOptions | None = None, *,
                 chain: tc.Toolchain | None = None, work_dir: Path | str | None = None,
                 progress: Progress | None = None) -> Evaluation:
        """The task itself is sound on this GPU (kind='validate')."""
        ctx = steps.context(spec, precision, options or EvalOptions(), chain, work_dir, progress)
        return run_steps(steps, ctx, "validate", lambda: steps.validate(ctx))

    return EntryPoints(evaluate, evaluate_baseline, validate)
