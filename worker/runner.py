"""One runner for every task backend: evaluate a candidate, evaluate the baseline, validate the task.

The pipeline, the CLI and the web app's GPU worker call these; each dispatches on `spec.backend` to the
engine of that format (worker.evaluate for C/CUDA, worker.kernelbench for PyTorch modules,
worker.taskyaml for make-based task.yaml tasks). All share the signatures of worker.evaluate and
return an `Evaluation`; none raises for a bad candidate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from worker import evaluate as cuda
from worker.results import Evaluation


def _engine(backend: str, what: str) -> Callable[..., Evaluation]:
    if backend == "cuda":
        return {"evaluate": cuda.evaluate, "baseline": cuda.evaluate_baseline, "validate": cuda.validate}[what]
    if backend == "pytorch":
        from worker import kernelbench

        return {"evaluate": kernelbench.evaluate_pytorch, "baseline": kernelbench.evaluate_pytorch_baseline,
                "validate": kernelbench.validate_pytorch}[what]
    if backend == "make":
        from worker import taskyaml

        return {"evaluate": taskyaml.evaluate_make, "baseline": taskyaml.evaluate_make_baseline,
                "validate": taskyaml.validate_make}[what]
    raise ValueError(f"unknown task backend {backend!r}")


def evaluate(spec: Any, precision: str, candidate_source: str, flags: str | None = None,
             options: cuda.EvalOptions | None = None, **kwargs: Any) -> Evaluation:
    """Check, time (and profile, where the backend can) a candidate against the task's baseline."""
    return _engine(spec.backend, "evaluate")(spec, precision, candidate_source, flags, options, **kwargs)


def evaluate_baseline(spec: Any, precision: str, options: cuda.EvalOptions | None = None,
                      **kwargs: Any) -> Evaluation:
    """Round 0: time (and profile) the task's own baseline."""
    return _engine(spec.backend, "baseline")(spec, precision, options, **kwargs)


def validate(spec: Any, precision: str, options: cuda.EvalOptions | None = None, **kwargs: Any) -> Evaluation:
    """Check that the task itself is sound on this GPU (its baseline against its reference)."""
    return _engine(spec.backend, "validate")(spec, precision, options, **kwargs)
