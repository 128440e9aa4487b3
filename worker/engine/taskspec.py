"""What every task format shares: precisions, categories, spec errors, tolerances, T(size) expressions.

Each format's own spec (worker.formats.*.spec) builds on these; nothing here knows a format.
"""

from __future__ import annotations

import ast
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

PRECISIONS = ("fp32", "bf16")
CATEGORIES = (
    "dense_linear_algebra",
    "sparse_matrix",
    "normalization",
    "activation",
    "reduction",
    "loss",
    "convolution",
    "pooling",
    "attention",
    "scan_sort",
    "stencil",
    "signal",
    "integration",
    "memory",
    # the other task formats' workloads: fused operator sequences (KernelBench level 2), whole model
    # architectures (level 3), anything else (a task.yaml task without a matching category)
    "fusion",
    "architecture",
    "other",
)
DEFAULT_TOLERANCE = {"fp32": (1e-4, 1e-4), "bf16": (1e-2, 1e-2)}


class SpecError(ValueError):
    """A spec that cannot be used; names the file and the offending field."""

    def __init__(self, path: Path | str, field_name: str, message: str):
        self.path = str(path)
        self.field = field_name
        self.message = message
        super().__init__(f"{self.path}: [{field_name}] {message}")


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    why: str = ""



_ALLOWED_NODES = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Call,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.USub, ast.UAdd,
)
_FUNCS = {"log2": math.log2, "log": math.log, "sqrt": math.sqrt}


def complexity_names(expr: str) -> set[str]:
    tree = ast.parse(expr, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise ValueError(f"'{type(node).__name__}' is not allowed in a complexity expression")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in _FUNCS and len(node.args) == 1
        ):
            raise ValueError("only log2(x), log(x) and sqrt(x) may be called")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise ValueError("only numbers may appear as constants")
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def eval_complexity(expr: str, size: dict[str, float]) -> float:
    """Evaluate T(sizes) without eval(): only arithmetic over the size names."""
    complexity_names(expr)  # validates the node set

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id not in size:
                raise ValueError(f"complexity uses '{node.id}', which this size does not define")
            return float(size[node.id])
        if isinstance(node, ast.UnaryOp):
            value = ev(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Call):
            return _FUNCS[node.func.id](ev(node.args[0]))
        left, right = ev(node.left), ev(node.right)
        ops = {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right}
        if isinstance(node.op, ast.Div):
            return left / right
        if isinstance(node.op, ast.Pow):
            return left**right
        return ops[type(node.op)]

    return ev(ast.parse(expr, mode="eval"))


def read_toml(path: Path) -> dict:
    """A spec file's TOML; SpecError when it is missing or not valid TOML (every spec.toml loader uses it)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(path, "file", "does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(path, "toml", f"is not valid TOML: {exc}") from None


@dataclass(frozen=True)
class Discovery:
    specs: tuple  # any format's spec (worker.registry.discover_tasks)
    errors: tuple[SpecError, ...]
