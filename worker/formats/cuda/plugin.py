"""The C/CUDA format (MSKernelBench): a `spec.toml` naming an `extern "C"` entry point, a naive `.cu`
baseline and a CPU reference, built with nvcc against the shared C++ harness (tasks/_harness)."""

from __future__ import annotations

from pathlib import Path

from worker.engine.formats import TaskFormat
from worker.engine.taskspec import read_toml
from worker.formats.cuda.evaluation import evaluate, evaluate_baseline, validate
from worker.formats.cuda.spec import load_spec


def _declares(path: Path) -> bool:
    return read_toml(path).get("backend", "cuda") == "cuda"


FORMAT = TaskFormat(
    name="cuda", label="C/CUDA (MSKernelBench)", spec_file="spec.toml", declares=_declares, load=load_spec,
    evaluate=evaluate, evaluate_baseline=evaluate_baseline, validate=validate,
)
