"""The task-format registry: the one place that knows which formats exist and how to reach each.

A format is a plug-in package under `worker/formats/<name>/` whose `plugin.py` defines one `TaskFormat`
(worker.engine.formats): how its spec file is recognised and loaded, and its evaluate / baseline /
validate entry points built on the shared engine. Adding a format means writing its package and one line
in `FORMATS` below; nothing else dispatches on a format's name (see docs/architecture.md).

- `spec.toml` without a `backend` key (or `backend = "cuda"`): an MSKernelBench-style C/CUDA task;
- `spec.toml` with `backend = "pytorch"`: a KernelBench task, a PyTorch `Model` file;
- `task.yaml`: a CUDAHercules-style task built with make.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from worker.engine.formats import TaskFormat
from worker.engine.results import Evaluation
from worker.engine.taskspec import Discovery, SpecError, read_toml
from worker.formats.cuda.plugin import FORMAT as CUDA
from worker.formats.make.plugin import FORMAT as MAKE
from worker.formats.pytorch.plugin import FORMAT as PYTORCH

FORMATS: dict[str, TaskFormat] = {f.name: f for f in (CUDA, PYTORCH, MAKE)}
BACKENDS = tuple(FORMATS)  # the format names, as stored in Task.backend
SPEC_FILES = tuple(dict.fromkeys(f.spec_file for f in FORMATS.values()))
AnySpec = Any  # one of the formats' spec classes; each offers the members of worker.engine.formats.SpecLike


def get(name: str) -> TaskFormat:
    """The format registered under `name`; ValueError naming the known ones otherwise."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown task format {name!r}: one of {', '.join(FORMATS)}") from None


def format_of(spec: Any) -> TaskFormat:
    """The format a loaded spec belongs to."""
    return get(spec.backend)


def backend_of(path: Path | str) -> str:
    """The format a spec file declares; SpecError if the file cannot say."""
    path = Path(path)
    claims = [f for f in FORMATS.values() if f.spec_file == path.name]
    if not claims:
        raise SpecError(path, "file", f"is not a task spec file ({' or '.join(SPEC_FILES)})")
    for fmt in claims:
        if fmt.declares(path):
            return fmt.name
    value = read_toml(path).get("backend") if path.suffix == ".toml" else None
    names = " or ".join(f.name for f in claims)
    elsewhere = [f"{f.spec_file} tasks are {f.name!r}" for f in FORMATS.values() if f.name == value]
    hint = f" ({elsewhere[0]})" if elsewhere else ""
    raise SpecError(path, "backend", f"{value!r} is not a {path.name} backend: {names}{hint}")


def load_task(path: Path | str) -> AnySpec:
    """Load one task's spec file (or the folder holding it), validated; SpecError names the field on a problem."""
    path = Path(path)
    if path.is_dir():
        found = [path / name for name in SPEC_FILES if (path / name).is_file()]
        if len(found) != 1:
            what = "both " + " and ".join(SPEC_FILES) if found else "no " + " or ".join(SPEC_FILES)
            raise SpecError(path, "file", f"a task folder needs exactly one spec file; it has {what}")
        path = found[0]
    return get(backend_of(path)).load(path)


def discover_tasks(root: Path | str, backends: tuple[str, ...] = BACKENDS) -> Discovery:
    """Every `<suite>/<name>/<spec file>` under root; bad ones are collected, not fatal. `backends` keeps
    only those formats (a spec whose format cannot be read is an error)."""
    specs, errors = [], []
    paths = sorted(p for name in SPEC_FILES for p in Path(root).glob(f"*/*/{name}"))
    for path in paths:
        others = [name for name in SPEC_FILES if name != path.name and (path.parent / name).is_file()]
        if others:
            if path.name == SPEC_FILES[0]:  # reported once, for the first spec file name
                errors.append(SpecError(path, "file", f"the folder has both {path.name} and {others[0]}: keep one"))
            continue
        try:
            if backend_of(path) not in backends:
                continue
            specs.append(load_task(path))
        except SpecError as exc:
            errors.append(exc)
    return Discovery(tuple(specs), tuple(errors))


def evaluate(spec: Any, precision: str, candidate_source: str, flags: str | None = None,
             options: Any = None, **kwargs: Any) -> Evaluation:
    """Check, time (and profile, where the format can) a candidate against the task's baseline."""
    return format_of(spec).evaluate(spec, precision, candidate_source, flags, options, **kwargs)


def evaluate_baseline(spec: Any, precision: str, options: Any = None, **kwargs: Any) -> Evaluation:
    """Round 0: time (and profile) the task's own baseline."""
    return format_of(spec).evaluate_baseline(spec, precision, options, **kwargs)


def validate(spec: Any, precision: str, options: Any = None, **kwargs: Any) -> Evaluation:
    """Check that the task itself is sound on this GPU (its baseline against its reference)."""
    return format_of(spec).validate(spec, precision, options, **kwargs)
