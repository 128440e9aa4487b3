"""What a task-format plug-in provides to the engine and the agents (registered in worker.registry).

The engine (worker.engine) does the work every format shares: the sandboxed child process, the GPU lock,
timing statistics, correctness comparison, scoring, profiling and results. A format supplies what only it
knows: how its spec file is recognised and loaded, and its evaluate / baseline / validate steps built on
that shared work. Callers reach a format through the registry, never by testing its name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.engine.results import Evaluation

Evaluate = Callable[..., Evaluation]


@dataclass(frozen=True)
class TaskFormat:
    name: str  # stored in Task.backend and in every spec's `backend`
    label: str  # what people read: "C/CUDA (MSKernelBench)"
    spec_file: str  # the file name a task folder of this format holds
    declares: Callable[[Path], bool]  # does this spec file (named spec_file) belong to this format?
    load: Callable[[Path], Any]  # the validated spec; SpecError naming the field otherwise
    evaluate: Evaluate  # (spec, precision, source, flags, options, **kw): check, time, profile a candidate
    evaluate_baseline: Evaluate  # (spec, precision, options, **kw): round 0, the task's own baseline
    validate: Evaluate  # (spec, precision, options, **kw): the task itself is sound on this GPU
