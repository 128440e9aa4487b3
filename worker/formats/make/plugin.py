"""The make format (CUDAHercules `task.yaml`): a folder with a Makefile-built harness; the candidate
replaces one solution file and the task's own program checks and times it."""

from __future__ import annotations

from pathlib import Path

from worker.engine.formats import TaskFormat
from worker.formats.make.evaluation import evaluate_make, evaluate_make_baseline, validate_make
from worker.formats.make.schema import load_make_spec


def _declares(path: Path) -> bool:
    return path.name == "task.yaml"


FORMAT = TaskFormat(
    name="make", label="task.yaml + make (CUDAHercules)", spec_file="task.yaml", declares=_declares,
    load=load_make_spec, evaluate=evaluate_make, evaluate_baseline=evaluate_make_baseline, validate=validate_make,
)
