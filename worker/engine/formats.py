"""What a task-format plug-in provides to the engine, the agents and the web app (registered in
worker.registry).

The engine (worker.engine) does the work every format shares: the sandboxed child process, the GPU lock,
timing statistics, correctness comparison, scoring, profiling and results. A format supplies what only it
knows: how its spec file is recognised and loaded, its evaluate / baseline / validate steps built on
that shared work, the format-specific parts of the agents' prompts, how a candidate is taken out of the
Coder's answer, and how the web app shows its tasks. Callers reach a format through the registry, never by
testing its name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from worker.engine.extract import Extraction
from worker.engine.results import Evaluation

Evaluate = Callable[..., Evaluation]


class SpecLike(Protocol):
    """What every format's loaded spec offers the agents, the registry and the web app."""

    backend: str  # the format's name
    name: str
    title: str
    suite: str
    category: str
    description: str
    provenance: str
    path: Path
    precisions: tuple[str, ...]
    sizes: tuple[dict[str, float], ...]
    complexity: str

    @property
    def directory(self) -> Path: ...
    def complexity_of(self, size: dict[str, float]) -> float: ...
    def tolerance(self, precision: str) -> Any: ...
    def baseline_source(self, precision: str) -> Path: ...
    def source_files(self, precision: str) -> tuple[Path, ...]: ...


@dataclass(frozen=True)
class Display:
    """How the web app shows a task of this format."""

    badge: str  # the catalog's badge beside the task ("" for none)
    badge_title: str  # the badge's tooltip
    baseline_name: str  # what the task's own source is called: "Baseline", "Reference module", ...
    shows_entry_point: bool  # the task list names the entry point (else the operator's name)
    candidate_help: str  # what a hand-written candidate must be (the manual turn form's help)
    # the catalog's Interface section: a template under the package's templates/ folder (kernelweb/settings.py
    # adds every worker/formats/*/templates to the template dirs), e.g. "formats/cuda/interface.html"
    interface_template: str


@dataclass(frozen=True)
class PromptFragments:
    """The format-specific parts of the agents' prompts (worker.agents.prompts holds the shared frame).
    Each callable takes the loaded spec first; `precision` is "fp32" or "bf16"."""

    describe: Callable[[Any, str], str]  # (spec, precision): the "Operator" section every agent gets
    library_rule: Callable[[Any], str]  # (spec): which libraries the candidate may call
    planner_subject: str  # "one CUDA operator": what the Planner's team makes faster
    planner_structure: str  # the shape the result must keep, one Planner rule
    # (spec, precision, hardware description, library rule): the Coder's whole system prompt
    coder_system: Callable[[Any, str, str, str], str]
    # (spec, precision): DEBUG_SYSTEM's subject, failing, trusted and structure_rule
    debug_frame: Callable[[Any, str], dict[str, str]]


@dataclass(frozen=True)
class CompileFlags:
    """A format whose candidates the worker compiles itself, with a command the Compiler agent may choose."""

    default: Callable[[str], list[str]]  # (arch "sm_90"): the default nvcc flags
    allowed_text: tuple[str, ...]  # the whitelist, as the Compiler agent and people read it


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
    language: str  # of its candidates and baselines: code fences, the editor, the viewer's lexer
    display: Display
    prompts: PromptFragments
    extract: Callable[[Any, str, str, str | None], Extraction]  # (spec, precision, answer, finish_reason)
    catalog_fields: Callable[[Any, str], dict[str, Any]]  # (spec, precision): its Task columns (entry_point, ...)
    compile_flags: CompileFlags | None = None  # None: the format's own build; no Compiler agent
    # (spec, precision, options, **kw): time the task's separate library reference; None where the
    # format times its expert reference within every evaluation
    evaluate_reference: Evaluate | None = None
    baseline_is_reference: bool = False  # the baseline is the expert reference itself (eager PyTorch)
    library_census: bool = False  # its baselines are part of the library census (`worker census`)
    missing: Callable[[Any], str | None] = lambda spec: None  # why a loaded task folder lacks a file it needs
