"""Every task format in one place: find and load a task folder whatever its backend.

- `spec.toml` without a `backend` key (or `backend = "cuda"`): an MSKernelBench-style C/CUDA task
  (worker.spec.TaskSpec);
- `spec.toml` with `backend = "pytorch"`: a KernelBench task, a PyTorch `Model` file
  (worker.kernelbench.PyTorchTaskSpec);
- `task.yaml`: a CUDAHercules-style task built with make (worker.taskyaml.MakeTaskSpec).

Every spec class offers the members the pipeline, the prompts and the web app use (see TaskSpec's
docstring), so callers dispatch on `spec.backend` only where the formats really differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Union

from worker.spec import BACKENDS, Discovery, SpecError, TaskSpec, load_spec, read_toml

if TYPE_CHECKING:
    from worker.kernelbench import PyTorchTaskSpec
    from worker.taskyaml import MakeTaskSpec

AnySpec = Union[TaskSpec, "PyTorchTaskSpec", "MakeTaskSpec"]
SPEC_FILES = ("spec.toml", "task.yaml")


def backend_of(path: Path | str) -> str:
    """The backend a spec file declares; SpecError if the file cannot say."""
    path = Path(path)
    if path.name == "task.yaml":
        return "make"
    data = read_toml(path)
    backend = data.get("backend", "cuda")
    if backend not in ("cuda", "pytorch"):
        hint = " (task.yaml tasks are 'make')" if backend == "make" else ""
        raise SpecError(path, "backend", f"{backend!r} is not a spec.toml backend: cuda or pytorch{hint}")
    return backend


def load_task(path: Path | str) -> AnySpec:
    """Load one task's spec file (spec.toml or task.yaml), validated; SpecError names the field on a problem."""
    path = Path(path)
    if path.is_dir():
        found = [path / name for name in SPEC_FILES if (path / name).is_file()]
        if len(found) != 1:
            what = "both spec.toml and task.yaml" if found else "no spec.toml or task.yaml"
            raise SpecError(path, "file", f"a task folder needs exactly one spec file; it has {what}")
        path = found[0]
    backend = backend_of(path)
    if backend == "cuda":
        return load_spec(path)
    if backend == "pytorch":
        from worker.kernelbench import load_pytorch_spec

        return load_pytorch_spec(path)
    from worker.taskyaml import load_make_spec

    return load_make_spec(path)


def discover_tasks(root: Path | str, backends: tuple[str, ...] = BACKENDS) -> Discovery:
    """Every `<suite>/<name>/spec.toml` and `<suite>/<name>/task.yaml` under root; bad ones are collected,
    not fatal. `backends` keeps only those backends (a spec whose backend cannot be read is an error)."""
    specs, errors = [], []
    paths = sorted(p for name in SPEC_FILES for p in Path(root).glob(f"*/*/{name}"))
    for path in paths:
        if path.name == "spec.toml" and (path.parent / "task.yaml").is_file():
            errors.append(SpecError(path, "file", "the folder has both spec.toml and task.yaml: keep one"))
            continue
        if path.name == "task.yaml" and (path.parent / "spec.toml").is_file():
            continue  # reported once, above
        try:
            if backend_of(path) not in backends:
                continue
            specs.append(load_task(path))
        except SpecError as exc:
            errors.append(exc)
    return Discovery(tuple(specs), tuple(errors))
