"""Task specs (`tasks/<suite>/<op>/spec.toml`): loading and validation.

Plain Python (no Django): the worker, the CLI and the web app's sync command
all read tasks through this module. See docs/task-format.md.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from worker.engine.taskspec import (
    CATEGORIES,
    DEFAULT_TOLERANCE,
    PRECISIONS,
    SpecError,
    Tolerance,
    complexity_names,
    eval_complexity,
    read_toml,
)

DISTRIBUTIONS = re.compile(
    r"^(uniform\(\s*-?[\d.e+-]+\s*,\s*-?[\d.e+-]+\s*\)|normal\(\s*-?[\d.e+-]+\s*,\s*[\d.e+-]+\s*\)"
    r"|randint\(\s*-?\d+\s*,\s*-?\d+\s*\)|csr|coo|csc|ell|probabilities|binary|causal_mask|distinct|ones)$"
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SIGNATURE = re.compile(r"^\s*void\s+([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*;?\s*$", re.S)


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str  # e.g. "const float*", "int", "__nv_bfloat16"

    @property
    def is_pointer(self) -> bool:
        return self.ctype.endswith("*")

    @property
    def is_const(self) -> bool:
        return self.ctype.startswith("const ")


@dataclass(frozen=True)
class Interface:
    entry: str
    params: tuple[Param, ...]
    signature: str

    @property
    def optimized_entry(self) -> str:
        return f"{self.entry}_optimized"

    def param_types(self) -> tuple[str, ...]:
        return tuple(_normalize_type(p.ctype) for p in self.params)


# Libraries a task's reference may link (never offered to candidates unless the task allows them).
REFERENCE_LIBRARIES = ("cublas", "cublasLt", "cusparse", "cufft", "curand")


@dataclass(frozen=True)
class LibraryReference:
    """A fast implementation of the task's interface with an NVIDIA library (`reference.toml` beside
    the spec): built and timed like a candidate, for expert-relative speed. Never shown to agents."""

    name: str
    libraries: tuple[str, ...]
    sources: dict[str, str]  # precision -> file name in the task folder
    notes: str = ""


@dataclass(frozen=True)
class TaskSpec:
    """A C/CUDA task (backend "cuda"). The other backends' specs (worker.formats.pytorch.spec.PyTorchTaskSpec,
    worker.formats.make.spec.MakeTaskSpec) offer the same members the pipeline, the prompts and the web app use:
    backend, name, title, suite, category, description, provenance, path, directory, precisions, sizes,
    complexity, complexity_of(), tolerance(), baseline_source(), source_files()."""

    backend: ClassVar[str] = "cuda"
    name: str
    title: str
    suite: str
    category: str
    description: str
    complexity: str
    outputs: tuple[str, ...]
    provenance: str
    interfaces: dict[str, Interface]
    sizes: tuple[dict[str, float], ...]
    constants: dict[str, float] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    tolerances: dict[str, Tolerance] = field(default_factory=dict)
    blocked_symbols: tuple[str, ...] = ()
    allowed_libraries: tuple[str, ...] = ()
    path: str = ""
    reference: LibraryReference | None = None

    @property
    def directory(self) -> Path:
        return Path(self.path).parent

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(self.interfaces)

    def source_files(self, precision: str) -> tuple[Path, ...]:
        """The files whose content defines the task at this precision (hashed to notice changes)."""
        return (Path(self.path), self.baseline_source(precision), self.harness_source())

    def reference_source(self, precision: str) -> Path | None:
        if self.reference is None or precision not in self.reference.sources:
            return None
        return self.directory / self.reference.sources[precision]

    def baseline_source(self, precision: str) -> Path:
        return self.directory / f"{self.interfaces[precision].entry}.cu"

    def harness_source(self) -> Path:
        return self.directory / "harness.cu"

    def complexity_of(self, size: dict[str, float]) -> float:
        return eval_complexity(self.complexity, size)

    def tolerance(self, precision: str) -> Tolerance:
        if precision in self.tolerances:
            return self.tolerances[precision]
        atol, rtol = DEFAULT_TOLERANCE[precision]
        return Tolerance(atol, rtol, "default")


def _normalize_type(ctype: str) -> str:
    ctype = re.sub(r"\s+", " ", ctype.replace("*", " * ")).strip()
    return ctype.replace(" *", "*")


def parse_signature(signature: str) -> Interface:
    """Parse `void name(type a, type* b, ...)`; default values are dropped."""
    match = _SIGNATURE.match(signature)
    if not match:
        raise ValueError(f"not a C declaration 'void name(params)': {signature!r}")
    entry, body = match.group(1), match.group(2).strip()
    params: list[Param] = []
    if body and body != "void":
        for raw in body.split(","):
            decl = raw.split("=")[0].strip()
            m = re.match(r"^(.*?)([A-Za-z_][A-Za-z0-9_]*)\s*$", decl, re.S)
            if not m or not m.group(1).strip():
                raise ValueError(f"cannot read parameter {raw.strip()!r} in {signature!r}")
            params.append(Param(m.group(2), _normalize_type(m.group(1))))
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate parameter names in {signature!r}")
    return Interface(entry=entry, params=tuple(params), signature=" ".join(signature.split()))


def _require(data: dict, key: str, kind: type | tuple, path: Path):
    if key not in data:
        raise SpecError(path, key, "is required")
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise SpecError(path, key, f"must be a non-empty {names}, got {value!r}")
    return value


def load_spec(path: Path | str) -> TaskSpec:
    """Read and validate one spec.toml; raise SpecError naming the field on any problem."""
    path = Path(path)
    data = read_toml(path)

    name = _require(data, "name", str, path)
    if not _NAME.match(name):
        raise SpecError(path, "name", f"must be a C identifier, got {name!r}")
    if path.parent.name != name:
        raise SpecError(path, "name", f"{name!r} must equal the folder name {path.parent.name!r}")
    category = _require(data, "category", str, path)
    if category not in CATEGORIES:
        raise SpecError(path, "category", f"{category!r} is not one of {', '.join(CATEGORIES)}")

    raw_ifaces = _require(data, "interface", dict, path)
    interfaces: dict[str, Interface] = {}
    for precision, signature in raw_ifaces.items():
        if precision not in PRECISIONS:
            raise SpecError(path, f"interface.{precision}", f"precision must be one of {PRECISIONS}")
        if not isinstance(signature, str):
            raise SpecError(path, f"interface.{precision}", "must be a C declaration string")
        try:
            interfaces[precision] = parse_signature(signature)
        except ValueError as exc:
            raise SpecError(path, f"interface.{precision}", str(exc)) from None
        baseline = path.parent / f"{interfaces[precision].entry}.cu"
        if not baseline.is_file():
            raise SpecError(path, f"interface.{precision}", f"baseline source {baseline.name} is missing")
    if not interfaces:
        raise SpecError(path, "interface", "needs at least one of fp32, bf16")

    outputs = tuple(_require(data, "outputs", list, path))
    for iface in interfaces.values():
        pointers = {p.name for p in iface.params if p.is_pointer}
        for out in outputs:
            if out not in pointers:
                raise SpecError(path, "outputs", f"{out!r} is not a pointer parameter of {iface.entry}")

    raw_sizes = _require(data, "sizes", list, path)
    sizes: list[dict[str, float]] = []
    for i, size in enumerate(raw_sizes):
        if not isinstance(size, dict) or not size:
            raise SpecError(path, f"sizes[{i}]", "must be a table of named numbers")
        for key, value in size.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                # 0 is a real size value (padding = 0); the complexity check below rejects empty work
                raise SpecError(path, f"sizes[{i}].{key}", f"must be a non-negative number, got {value!r}")
        sizes.append(dict(size))

    complexity = _require(data, "complexity", str, path)
    try:
        names = complexity_names(complexity)
    except (SyntaxError, ValueError) as exc:
        raise SpecError(path, "complexity", f"{complexity!r}: {exc}") from None
    for i, size in enumerate(sizes):
        missing = names - set(size)
        if missing:
            raise SpecError(path, f"sizes[{i}]", f"lacks {', '.join(sorted(missing))} used by complexity")
        if eval_complexity(complexity, size) <= 0:
            raise SpecError(path, "complexity", f"is not positive for sizes[{i}]")

    constants = data.get("constants", {})
    for key, value in constants.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(path, f"constants.{key}", f"must be a number, got {value!r}")

    inputs = data.get("inputs", {})
    for key, value in inputs.items():
        if not isinstance(value, str) or not DISTRIBUTIONS.match(value.strip()):
            raise SpecError(path, f"inputs.{key}", f"unknown distribution {value!r}")

    tolerances: dict[str, Tolerance] = {}
    for precision, tol in data.get("tolerance", {}).items():
        where = f"tolerance.{precision}"
        if precision not in PRECISIONS or not isinstance(tol, dict):
            raise SpecError(path, where, f"precision must be one of {PRECISIONS}")
        for key in ("atol", "rtol"):
            value = tol.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise SpecError(path, f"{where}.{key}", f"must be a number >= 0, got {value!r}")
        tolerances[precision] = Tolerance(float(tol["atol"]), float(tol["rtol"]), str(tol.get("why", "")))

    rules = data.get("rules", {})
    blocked = rules.get("blocked_symbols", [])
    allowed = rules.get("allowed_libraries", [])
    for key, value in (("blocked_symbols", blocked), ("allowed_libraries", allowed)):
        if not isinstance(value, list) or not all(isinstance(v, str) and _NAME.match(v) for v in value):
            raise SpecError(path, f"rules.{key}", "must be a list of identifiers")

    return TaskSpec(
        name=name,
        title=_require(data, "title", str, path),
        suite=_require(data, "suite", str, path),
        category=category,
        description=_require(data, "description", str, path),
        complexity=complexity,
        outputs=outputs,
        provenance=str(data.get("provenance", "")),
        interfaces=interfaces,
        sizes=tuple(sizes),
        constants=dict(constants),
        inputs=dict(inputs),
        tolerances=tolerances,
        blocked_symbols=tuple(blocked),
        allowed_libraries=tuple(allowed),
        path=str(path),
        reference=_load_reference(path.parent / "reference.toml", tuple(interfaces)),
    )


def _load_reference(path: Path, precisions: tuple[str, ...]) -> LibraryReference | None:
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(path, "toml", f"is not valid TOML: {exc}") from None
    unknown = set(data) - {"name", "libraries", "notes", *PRECISIONS}
    if unknown:
        raise SpecError(path, ", ".join(sorted(unknown)), "unknown keys (name, libraries, notes, fp32, bf16)")
    name = _require(data, "name", str, path)
    libraries = data.get("libraries", [])
    if not isinstance(libraries, list) or not all(lib in REFERENCE_LIBRARIES for lib in libraries):
        raise SpecError(path, "libraries", f"must be a list drawn from {', '.join(REFERENCE_LIBRARIES)}")
    sources = {}
    for precision in precisions:
        file = data.get(precision)
        if file is None:
            continue
        if not isinstance(file, str) or "/" in file or not (path.parent / file).is_file():
            raise SpecError(path, precision, f"must name a source file in {path.parent}, got {file!r}")
        sources[precision] = file
    if not sources:
        raise SpecError(path, "fp32", "a reference needs at least one source (fp32 = \"reference.cu\")")
    return LibraryReference(name, tuple(libraries), sources, str(data.get("notes", "")))
