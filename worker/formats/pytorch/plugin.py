"""The PyTorch-module format (KernelBench): a `spec.toml` with `backend = "pytorch"` beside a `Model`
file; candidates are a `ModelNew` module, built and run by the sandboxed torch harness."""

from __future__ import annotations

from pathlib import Path

from worker.engine.formats import TaskFormat
from worker.engine.taskspec import read_toml
from worker.formats.pytorch.evaluation import evaluate_pytorch, evaluate_pytorch_baseline, validate_pytorch
from worker.formats.pytorch.spec import load_pytorch_spec


def _declares(path: Path) -> bool:
    return read_toml(path).get("backend") == "pytorch"


FORMAT = TaskFormat(
    name="pytorch", label="PyTorch module (KernelBench)", spec_file="spec.toml", declares=_declares,
    load=load_pytorch_spec, evaluate=evaluate_pytorch, evaluate_baseline=evaluate_pytorch_baseline,
    validate=validate_pytorch,
)
