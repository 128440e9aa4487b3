"""KernelBench ("pytorch") task specs: `spec.toml` (`backend = "pytorch"`) beside the KernelBench model file it
names, verbatim: `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`.

The model file is only read statically here (ast, `read_model_file`): nothing in this package imports torch
or the task's code; everything that runs them goes through `torch_harness.py` in a sandboxed child process.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from worker.engine.taskspec import CATEGORIES, PRECISIONS, SpecError, Tolerance, read_toml

# KernelBench's correctness check (its eval: torch.allclose(output, output_new, atol=1e-02, rtol=1e-02)).
KERNELBENCH_TOLERANCE = (1e-2, 1e-2)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]*$")
_SPEC_KEYS = (
    "backend", "name", "suite", "title", "category", "description", "model", "precisions",
    "compare_compile", "provenance", "tolerance", "rules",
)
_RULE_KEYS = ("forbid_torch_compute",)


@dataclass(frozen=True)
class PyTorchTaskSpec:
    """A KernelBench task: one PyTorch `Model` at one fixed set of shapes (so one size, complexity 1,
    and P equals the speedup). Offers the members every backend's spec has (the C/CUDA TaskSpec's)."""

    backend: ClassVar[str] = "pytorch"
    name: str
    title: str
    suite: str
    category: str
    description: str
    provenance: str
    path: str  # the spec.toml
    model_file: str  # file name in the task folder
    interface: str  # Model.forward's signature, e.g. "forward(self, A: torch.Tensor) -> torch.Tensor"
    precisions: tuple[str, ...] = ("fp32",)
    sizes: tuple[dict[str, float], ...] = ({},)  # the model file's numeric constants, shown to users
    tolerances: dict[str, Tolerance] = field(default_factory=dict)
    forbid_torch_compute: bool = True
    compare_compile: bool = False
    complexity: str = "1"

    @property
    def directory(self) -> Path:
        return Path(self.path).parent

    @property
    def model_path(self) -> Path:
        return self.directory / self.model_file

    def complexity_of(self, size: dict[str, float]) -> float:
        return 1.0

    def tolerance(self, precision: str) -> Tolerance:
        """The task's own, else KernelBench's: its harness accepts torch.allclose(atol=1e-2, rtol=1e-2) at
        every precision, so a kernel it accepts is not refused here for a tighter default."""
        if precision in self.tolerances:
            return self.tolerances[precision]
        return Tolerance(*KERNELBENCH_TOLERANCE, "KernelBench's default")

    def baseline_source(self, precision: str) -> Path:
        """The code the agents start from: the PyTorch model file (the same at every precision)."""
        return self.model_path

    def source_files(self, precision: str) -> tuple[Path, ...]:
        return (Path(self.path), self.model_path)


@dataclass(frozen=True)
class ModelFileInfo:
    """What the static reading of a KernelBench model file yields."""

    constants: dict[str, float]
    interface: str
    docstring: str


def read_model_file(path: Path, source: str | None = None, spec_path: Path | None = None) -> ModelFileInfo:
    """Read a KernelBench model file with ast (never imported); SpecError names what is missing."""
    where = spec_path or path
    field_name = "model"
    if source is None:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError(where, field_name, f"cannot read {path.name}: {exc}") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise SpecError(where, field_name, f"{path.name} line {exc.lineno}: not valid Python ({exc.msg})") from None
    top = {type(n).__name__ + ":" + getattr(n, "name", ""): n for n in tree.body}
    model = top.get("ClassDef:Model")
    if not isinstance(model, ast.ClassDef):
        raise SpecError(where, field_name, f"{path.name} defines no `class Model(nn.Module)` at module level")
    if not any(_dotted_text(b).split(".")[-1] == "Module" for b in model.bases):
        raise SpecError(where, field_name, f"{path.name}: class Model must subclass nn.Module (line {model.lineno})")
    for func in ("get_inputs", "get_init_inputs"):
        if not isinstance(top.get(f"FunctionDef:{func}"), ast.FunctionDef):
            raise SpecError(where, field_name, f"{path.name} defines no `def {func}()` at module level")
    forward = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None:
        raise SpecError(where, field_name, f"{path.name}: class Model defines no forward() method")
    returns = f" -> {ast.unparse(forward.returns)}" if forward.returns else ""
    interface = f"forward({ast.unparse(forward.args)}){returns}"
    return ModelFileInfo(_module_constants(tree), interface, inspect.cleandoc(ast.get_docstring(model) or ""))


def _dotted_text(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted_text(node.value)}.{node.attr}"
    return ""


def _module_constants(tree: ast.Module) -> dict[str, float]:
    """Module-level `NAME = <number>` (also arithmetic over earlier constants, e.g. `N = 2 * M`)."""
    found: dict[str, float] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        number = _number(value, found)
        if number is not None:
            found[target] = number
        else:
            found.pop(target, None)  # rebound to something else: no longer a size
    return found


def _number(node: ast.AST, known: dict[str, float]) -> float | None:
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _number(node.operand, known)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.BinOp):
        left, right = _number(node.left, known), _number(node.right, known)
        if left is None or right is None:
            return None
        try:
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.FloorDiv):
                return left // right
            if isinstance(node.op, ast.Div):
                return left / right
            if isinstance(node.op, ast.Pow) and abs(right) <= 64:
                return left**right
        except (ZeroDivisionError, OverflowError):
            return None
    return None


def title_from(name: str) -> str:
    words = re.sub(r"^\d+_", "", name).replace("_", " ").strip()
    return words[:1].upper() + words[1:] if words else name


def load_pytorch_spec(path: Path | str) -> PyTorchTaskSpec:
    """Read and validate a pytorch task's spec.toml and its model file; SpecError names the field."""
    path = Path(path)
    data = read_toml(path)

    unknown = sorted(set(data) - set(_SPEC_KEYS))
    if unknown:
        raise SpecError(path, ", ".join(unknown), f"unknown keys; a pytorch spec has {', '.join(_SPEC_KEYS)}")
    if data.get("backend") != "pytorch":
        raise SpecError(path, "backend", f'must be "pytorch" for a KernelBench task, got {data.get("backend")!r}')
    name = _string(data, "name", path)
    if not _NAME.match(name):
        raise SpecError(path, "name", f"{name!r} must match ^[A-Za-z0-9][A-Za-z0-9_]*$ (letters, digits, _)")
    if path.parent.name != name:
        raise SpecError(path, "name", f"{name!r} must equal the folder name {path.parent.name!r}")
    suite = _string(data, "suite", path)
    category = _string(data, "category", path)
    if category not in CATEGORIES:
        raise SpecError(path, "category", f"{category!r} is not one of {', '.join(CATEGORIES)}")

    model_file = _string(data, "model", path)
    if "/" in model_file or "\\" in model_file or model_file in (".", ".."):
        raise SpecError(path, "model", f"must be a file name in the task folder, got {model_file!r}")
    if not (path.parent / model_file).is_file():
        raise SpecError(path, "model", f"{model_file} is missing from {path.parent}")
    info = read_model_file(path.parent / model_file, spec_path=path)

    raw_precisions = data.get("precisions", ["fp32"])
    if (
        not isinstance(raw_precisions, list)
        or not raw_precisions
        or any(p not in PRECISIONS for p in raw_precisions)
        or len(set(raw_precisions)) != len(raw_precisions)
    ):
        raise SpecError(
            path, "precisions", f"must be a non-empty list of distinct {PRECISIONS}, got {raw_precisions!r}"
        )

    tolerances: dict[str, Tolerance] = {}
    raw_tol = data.get("tolerance", {})
    if not isinstance(raw_tol, dict):
        raise SpecError(path, "tolerance", "must be tables [tolerance.fp32] / [tolerance.bf16]")
    for precision, tol in raw_tol.items():
        where = f"tolerance.{precision}"
        if precision not in PRECISIONS or not isinstance(tol, dict):
            raise SpecError(path, where, f"precision must be one of {PRECISIONS}, with atol and rtol")
        for key in ("atol", "rtol"):
            value = tol.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise SpecError(path, f"{where}.{key}", f"must be a number >= 0, got {value!r}")
        tolerances[precision] = Tolerance(float(tol["atol"]), float(tol["rtol"]), str(tol.get("why", "")))

    compare_compile = data.get("compare_compile", False)
    if not isinstance(compare_compile, bool):
        raise SpecError(path, "compare_compile", f"must be true or false, got {compare_compile!r}")
    rules = data.get("rules", {})
    if not isinstance(rules, dict):
        raise SpecError(path, "rules", "must be a table")
    unknown_rules = sorted(set(rules) - set(_RULE_KEYS))
    if unknown_rules:
        raise SpecError(path, "rules." + unknown_rules[0], f"unknown rule; pytorch tasks know {', '.join(_RULE_KEYS)}")
    forbid = rules.get("forbid_torch_compute", True)
    if not isinstance(forbid, bool):
        raise SpecError(path, "rules.forbid_torch_compute", f"must be true or false, got {forbid!r}")

    title = data.get("title", title_from(name))
    description = data.get("description", info.docstring or title)
    provenance = data.get("provenance", "")
    for key, value in (("title", title), ("description", description), ("provenance", provenance)):
        if not isinstance(value, str):
            raise SpecError(path, key, f"must be a string, got {value!r}")
    return PyTorchTaskSpec(
        name=name,
        title=title.strip() or title_from(name),
        suite=suite,
        category=category,
        description=description,
        provenance=provenance,
        path=str(path),
        model_file=model_file,
        interface=info.interface,
        precisions=tuple(raw_precisions),
        sizes=(dict(info.constants),),
        tolerances=tolerances,
        forbid_torch_compute=forbid,
        compare_compile=compare_compile,
    )


def _string(data: dict[str, Any], key: str, path: Path) -> str:
    if key not in data:
        raise SpecError(path, key, "is required")
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise SpecError(path, key, f"must be a non-empty string, got {value!r}")
    return value.strip()
