"""KernelBench ("pytorch") tasks: the spec, the static checks on a candidate, and the evaluation.

A task is a folder `tasks/<suite>/<name>/` with a `spec.toml` (`backend = "pytorch"`) and the
KernelBench file it names, verbatim: `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`.
A candidate is a whole Python file defining `class ModelNew(nn.Module)` that compiles its own
kernels (usually through `torch.utils.cpp_extension.load_inline`).

The model file and the candidate are only ever read statically here (ast): this module imports
neither torch nor the task's code. Everything that runs them goes through `worker/formats/pytorch/torch_harness.py`
in a sandboxed child process (DESIGN §8):

    static checks -> build (imports the candidate: load_inline compiles; no GPU lock, GPU hidden)
    -> check (trials x seeds, poisoned allocator, inputs unchanged) under the GPU lock
    -> time eager Model (cached), ModelNew and optionally torch.compile(Model) -> score -> flags

The entry points take the same arguments as worker.formats.cuda.evaluation's and return an `Evaluation`; nothing
here raises for a bad candidate.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import inspect
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from worker.engine import sandbox
from worker.engine import toolchain as tc
from worker.engine.context import EvalContext, EvalOptions, Progress, guarded, timing_cache_dir, write_json_atomic
from worker.engine.harness import HARNESS_LIMITS, classify_crash, read_result
from worker.engine.results import CompileResult, CrashInfo, Evaluation, SizeResult, TimingStats, Verdict
from worker.engine.scoring import score_sizes
from worker.engine.static_rules import (
    DEVICE_CONTROL,
    SYSTEM,
    SYSTEM_TYPES,
    TIMING,
    StaticReport,
    Violation,
    strip_comments,
)
from worker.engine.taskspec import CATEGORIES, DEFAULT_TOLERANCE, PRECISIONS, SpecError, Tolerance, read_toml

HARNESS = Path(__file__).with_name("torch_harness.py")

# ================================================================ the task spec

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]*$")
_SPEC_KEYS = (
    "backend", "name", "suite", "title", "category", "description", "model", "precisions",
    "compare_compile", "provenance", "tolerance", "rules",
)
_RULE_KEYS = ("forbid_torch_compute",)


@dataclass(frozen=True)
class PyTorchTaskSpec:
    """A KernelBench task: one PyTorch `Model` at one fixed set of shapes (so one size, complexity 1,
    and P equals the speedup). Offers the members every backend's spec has (see worker.formats.cuda.spec.TaskSpec)."""

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
        if precision in self.tolerances:
            return self.tolerances[precision]
        atol, rtol = DEFAULT_TOLERANCE[precision]
        return Tolerance(atol, rtol, "default")

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


def _title_from(name: str) -> str:
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

    title = data.get("title", _title_from(name))
    description = data.get("description", info.docstring or title)
    provenance = data.get("provenance", "")
    for key, value in (("title", title), ("description", description), ("provenance", provenance)):
        if not isinstance(value, str):
            raise SpecError(path, key, f"must be a string, got {value!r}")
    return PyTorchTaskSpec(
        name=name,
        title=title.strip() or _title_from(name),
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


# ---------------------------------------------------------------- writing a task folder (the importer's)


def toml_string(value: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in value:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\b\t\n\f\r":
            out.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"TOML here takes finite numbers only, got {value!r}")
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def write_pytorch_task(
    dest_folder: Path | str,
    *,
    name: str,
    suite: str,
    model_text: str,
    category: str,
    title: str | None = None,
    description: str | None = None,
    provenance: str = "",
    precisions: tuple[str, ...] | list[str] = ("fp32",),
    forbid_torch_compute: bool = True,
    compare_compile: bool = False,
    tolerances: dict[str, Tolerance] | None = None,
    model_file: str = "model.py",
) -> PyTorchTaskSpec:
    """Write `dest_folder` (the task folder itself, named `name`): the model file verbatim and a spec.toml,
    then load it back. The folder is staged beside the destination and validated first, so a SpecError (bad
    model text, unknown category, ...) leaves the destination as it was."""
    folder = Path(dest_folder)
    spec_path = folder / "spec.toml"
    if folder.name != name:
        raise SpecError(spec_path, "name", f"{name!r} must equal the folder name {folder.name!r}")
    lines = [
        'backend = "pytorch"',
        f"name = {toml_string(name)}",
        f"suite = {toml_string(suite)}",
        f"title = {toml_string(title or _title_from(name))}",
        f"category = {toml_string(category)}",
    ]
    if description is not None:
        lines.append(f"description = {toml_string(description)}")
    lines += [
        f"model = {toml_string(model_file)}",
        f"precisions = {_toml_value(list(precisions))}",
        f"compare_compile = {_toml_value(compare_compile)}",
        f"provenance = {toml_string(provenance)}",
    ]
    for precision, tol in (tolerances or {}).items():
        lines += ["", f"[tolerance.{precision}]", f"atol = {_toml_value(float(tol.atol))}",
                  f"rtol = {_toml_value(float(tol.rtol))}"]
        if tol.why:
            lines.append(f"why = {toml_string(tol.why)}")
    lines += ["", "[rules]", f"forbid_torch_compute = {_toml_value(forbid_torch_compute)}", ""]

    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
    try:
        stage = staging / name
        stage.mkdir()
        (stage / model_file).write_text(model_text, encoding="utf-8")
        (stage / "spec.toml").write_text("\n".join(lines), encoding="utf-8")
        try:
            load_pytorch_spec(stage / "spec.toml")
        except SpecError as exc:
            raise SpecError(spec_path, exc.field, exc.message.replace(str(stage), str(folder))) from None
        folder.mkdir(exist_ok=True)
        for file in (model_file, "spec.toml"):
            os.replace(stage / file, folder / file)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return load_pytorch_spec(spec_path)


# Checked in order: the first family whose keyword occurs in the (lower-cased) problem name wins, so
# "Softmax" is a normalization before "max" could make it a reduction, and "cumsum" a scan before "sum".
CATEGORY_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("attention", ("attention",)),
    ("convolution", ("conv",)),
    ("pooling", ("pool",)),
    ("loss", ("loss", "entropy")),
    ("normalization", ("softmax", "norm")),
    ("scan_sort", ("cumsum", "cumprod", "scan", "sort", "topk")),
    ("dense_linear_algebra", ("matmul", "gemm", "bmm", "gemv", "matrix", "einsum")),
    ("activation", (
        "relu", "gelu", "sigmoid", "tanh", "swish", "silu", "elu", "mish", "softplus", "softsign",
        "hardtanh", "activation",
    )),
    ("reduction", ("reduction", "sum", "mean", "argmax", "argmin", "max", "min", "prod")),
)


def kernelbench_category(name: str, level: int | str) -> str:
    """A category for a KernelBench problem: level 2 is fusion, level 3 (and 4) architecture; a level 1
    operator is guessed from its name, "other" when nothing matches."""
    level = int(level) if str(level).isdigit() else 0
    if level == 2:
        return "fusion"
    if level >= 3:
        return "architecture"
    lowered = name.lower()
    for category, words in CATEGORY_KEYWORDS:
        if any(w in lowered for w in words):
            return category
    return "other"


# ================================================================ static checks on a candidate
#
# KernelBench's rules, checked before any build. Like worker.formats.cuda.static_checks these are a cheap first line;
# the poisoned correctness check and the device-wide-synchronized timing remain the real defence.

# Imports refused outright, by the rule they break. Threads and processes run work the timing cannot see.
THREAD_MODULES = ("threading", "_thread", "multiprocessing", "concurrent", "asyncio")
# Timing, introspection, process and file access: ways to fake a result or reach the harness in-process.
TAMPER_MODULES = (
    "time", "timeit", "builtins", "importlib", "ctypes", "cffi", "gc", "inspect", "subprocess", "signal",
    "pickle", "marshal", "runpy", "socket", "shutil", "tempfile", "pty", "code", "codeop", "io", "pathlib",
    "atexit", "__main__",
)
# Python names that put work on another stream (outside the timed one) or capture graphs on one.
STREAM_NAMES = (
    "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream", "torch.cuda.set_stream",
    "torch.cuda.StreamContext", "torch.Stream", "torch.cuda.graph", "torch.cuda.graphs", "torch.cuda.CUDAGraph",
)
# Python names that time, patch, load or reach outside: referenced at all, they are refused. A trailing
# "*" matches a prefix (os.exec* covers execv, execvp, ...).
TAMPER_NAMES = (
    "torch.cuda.Event", "torch.Event", "torch.load", "torch._C", "torch.cuda.empty_cache",
    "torch.cuda.caching_allocator_alloc", "torch.cuda.caching_allocator_delete", "torch.cuda.memory",
    "sys.modules", "sys._getframe", "sys.exit", "sys.settrace", "sys.setprofile", "sys.meta_path",
    "sys.path_hooks", "os.system", "os.popen", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os._exit",
    "os.abort", "os.posix_spawn*", "os.exec*", "os.spawn*", "os.putenv", "os.unsetenv", "os.environ.update",
    "os.environ.setdefault", "os.environ.pop", "os.environ.clear",
)
TAMPER_BUILTINS = (
    "eval", "exec", "compile", "open", "__import__", "globals", "vars", "breakpoint", "input", "exit", "quit",
)
TAMPER_ATTRIBUTES = (
    "__globals__", "__builtins__", "__code__", "__closure__", "__subclasses__", "__mro__", "__bases__",
    "__base__", "__dict__", "__traceback__", "tb_frame", "f_back", "f_globals", "f_locals", "f_builtins",
    "gi_frame", "cr_frame",
)
# In the C++/CUDA source strings: other streams, host threads and host callbacks escape the timed stream.
CPP_STREAM_PATTERNS = (
    r"\bcudaStreamCreate\w*",
    r"\bgetStreamFromPool\b",
    r"\bgetStreamFromExternal\b",
    r"\bsetCurrentCUDAStream\b",
    r"\bCUDAStreamGuard\b",
    r"\bcudaStreamPerThread\b",
    r"\bcudaLaunchHostFunc\b",
    r"\bcudaStreamAddCallback\b",
    r"\bstd\s*::\s*(?:thread|jthread|async)\b",
    r"\bpthread_?\w*",
    r"#\s*include\s*<thread>",
)
# In the C++/CUDA source strings: reaching back into Python, plus worker.formats.cuda.static_checks' timing, system
# and device-control lists (the same rules a C/CUDA candidate obeys).
CPP_TAMPER_PATTERNS = (
    r"\bPy(?:Run|Import|Eval|Sys)_\w+",
    r"\bPyObject_(?:Set|Del)Attr\w*",
    r"\bPy_CompileString\w*",
    r"\b(?:py|pybind11)\s*::\s*(?:exec|eval|eval_file|globals|module_?\s*::\s*import)\b",
    r"\bstd\s*::\s*chrono\b",
    r"##",  # token pasting builds identifiers (cudaStream##Create...) that no pattern here can see
)
# Calls allowed in ModelNew.forward when forbid_torch_compute is on: allocation, layout and metadata,
# never arithmetic. Anything else under torch.* (torch.matmul, torch.nn.functional.relu, ...) is refused.
TORCH_ALLOWED_CALLS = (
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like", "torch.ones",
    "torch.ones_like", "torch.full", "torch.full_like", "torch.tensor", "torch.as_tensor", "torch.arange",
    "torch.device", "torch.dtype", "torch.Size", "torch.is_tensor", "torch.is_floating_point", "torch.numel",
    "torch.get_default_dtype", "torch.promote_types", "torch.result_type", "torch.finfo", "torch.iinfo",
    "torch.no_grad", "torch.inference_mode", "torch.reshape", "torch.flatten", "torch.transpose",
    "torch.permute", "torch.squeeze", "torch.unsqueeze", "torch.narrow", "torch.as_strided", "torch.chunk",
    "torch.split", "torch.unbind", "torch.nn.Parameter", "torch.cuda.current_device", "torch.cuda.current_stream",
    "torch.cuda.default_stream", "torch.cuda.get_device_properties", "torch.cuda.get_device_capability",
    "torch.cuda.is_available", "torch.cuda.device", "torch.cuda.device_count", "torch.cuda.synchronize",
)
# Tensor methods (and ATen/torch:: functions in the C++ sources) that compute. Method calls are refused by
# name because the receiver's type is unknown statically; views, casts, .contiguous(), .size(), .data_ptr()
# and the extension's own functions are not on the list.
COMPUTE_OPS = (
    "matmul", "mm", "bmm", "mv", "dot", "vdot", "addmm", "addmv", "addbmm", "baddbmm", "einsum", "linear",
    "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "softmax", "log_softmax", "sum", "nansum", "mean", "max", "min", "amax", "amin",
    "argmax", "argmin", "prod", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort", "argsort",
    "topk", "kthvalue", "median", "mode", "relu", "relu_", "relu6", "gelu", "sigmoid", "sigmoid_", "tanh",
    "tanh_", "silu", "mish", "elu", "selu", "celu", "softplus", "softsign", "hardtanh", "hardsigmoid",
    "hardswish", "leaky_relu", "logsigmoid", "exp", "exp_", "expm1", "log", "log_", "log1p", "log2", "sqrt",
    "rsqrt", "pow", "pow_", "square", "abs", "abs_", "neg", "reciprocal", "sign", "erf", "sin", "cos", "floor",
    "ceil", "round", "clamp", "clamp_", "clip", "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_",
    "addcmul", "addcdiv", "lerp", "norm", "var", "std", "var_mean", "std_mean", "logsumexp", "layer_norm",
    "group_norm", "batch_norm", "instance_norm", "where", "masked_fill", "masked_fill_", "index_select",
    "gather", "scatter", "scatter_add", "index_add", "cross_entropy", "nll_loss", "mse_loss", "max_pool1d",
    "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "scaled_dot_product_attention",
    "tril", "triu", "diag", "outer", "cross", "all", "any",
)
# nn.Module classes that only hold weights: creating and reading them is fine, calling them is not a thing.
PARAMETER_HOLDERS = ("torch.nn.Parameter", "torch.nn.ParameterList", "torch.nn.ParameterDict", "torch.nn.Buffer")
_CUSTOM_BUILDERS = ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load")


def check_candidate(source: str, spec: PyTorchTaskSpec) -> StaticReport:
    """Apply KernelBench's rules to a candidate file; every violation names its line and rule."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return StaticReport((Violation("syntax", exc.lineno or 0, f"not valid Python: {exc.msg}"),))
    cand = _Candidate(tree)
    out: list[Violation] = []
    out += cand.check_model_new()
    out += cand.check_custom_code()
    out += cand.check_python_rules()
    out += _check_cpp_strings(cand, spec.forbid_torch_compute)
    if spec.forbid_torch_compute and cand.model_new is not None:
        out += cand.check_forward_compute()
    unique = {(v.line, v.rule, v.message): v for v in out}
    return StaticReport(tuple(sorted(unique.values(), key=lambda v: (v.line, v.rule, v.message))))


def _matches(name: str, patterns: tuple[str, ...]) -> str | None:
    for pattern in patterns:
        if pattern.endswith("*") and name.startswith(pattern[:-1]):
            return pattern
        if name == pattern or name.startswith(pattern + "."):
            return pattern
    return None


class _Candidate:
    """One parsed candidate: its import aliases, module-level names and the ModelNew class."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.aliases: dict[str, str] = {}  # local name -> dotted module path or object
        self.module_names: set[str] = set()  # local names bound to imported modules or their members
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    self.aliases[local] = a.name if a.asname else a.name.split(".")[0]
                    self.module_names.add(local)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                    self.module_names.add(a.asname or a.name)
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.model_new = self.classes.get("ModelNew")
        self.extensions: set[str] = set()  # module-level names bound to a compiled extension
        for node in tree.body:
            if isinstance(node, ast.Assign) and self._is_builder_call(node.value):
                self.extensions |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target = self.resolve(node.value)
                if target and target.startswith("torch."):  # `mm = torch.matmul`: an alias of a torch op
                    self.aliases[node.targets[0].id] = target

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted name an expression refers to, imports substituted (`F.relu` -> torch.nn.functional.relu)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _is_builder_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self.resolve(node.func) or ""
        return name in _CUSTOM_BUILDERS or name.endswith(".load_inline") or name == "load_inline"

    # ------------------------------------------------------------ structure

    def check_model_new(self) -> list[Violation]:
        cls = self.model_new
        if cls is None:
            return [Violation("model-new", 0, "no `class ModelNew(nn.Module)` at module level: the candidate "
                                              "must define ModelNew with the same constructor and forward as Model")]
        out = []
        if not any((self.resolve(b) or "").split(".")[-1] == "Module" for b in cls.bases):
            out.append(Violation("model-new", cls.lineno, "class ModelNew must subclass nn.Module"))
        if not any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in cls.body):
            out.append(Violation("model-new", cls.lineno, "class ModelNew defines no forward() method"))
        return out

    def check_custom_code(self) -> list[Violation]:
        if any(self._is_builder_call(n) for n in ast.walk(self.tree)):
            return []
        return [Violation("custom-code", 0, "no load_inline(...) or torch.utils.cpp_extension.load(...) call: "
                                            "the candidate must compile its own kernels")]

    # ------------------------------------------------------------ tampering, fallbacks, streams (whole file)

    def check_python_rules(self) -> list[Violation]:
        out: list[Violation] = []

        def add(rule: str, node: ast.AST, message: str) -> None:
            out.append(Violation(rule, getattr(node, "lineno", 0), message))

        inner = {id(n.value) for n in ast.walk(self.tree) if isinstance(n, ast.Attribute)}
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                add("no-fallback", node, "try/except is not allowed: a candidate may not fall back to PyTorch "
                                         "or hide its own errors")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for mod in mods:
                    root = mod.split(".")[0]
                    if root in THREAD_MODULES:
                        add("streams-threads", node, f"imports {mod}: threads and processes run work the timing "
                                                     "cannot see")
                    elif root in TAMPER_MODULES:
                        add("tampering", node, f"imports {mod}: timing, introspection, files and processes are "
                                               "off limits to a candidate")
            elif isinstance(node, (ast.Attribute, ast.Name)):
                out += self._check_reference(node, outermost=id(node) not in inner)
            elif isinstance(node, ast.Call):
                out += self._check_call(node)
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for target in targets:
                    out += self._check_target(target)
        return out

    def _check_target(self, target: ast.AST) -> list[Violation]:
        """Assignments (and del) into modules: monkey-patching torch, time, ... or the environment."""
        if isinstance(target, (ast.Tuple, ast.List)):
            return [v for t in target.elts for v in self._check_target(t)]
        if isinstance(target, ast.Starred):
            return self._check_target(target.value)
        if isinstance(target, ast.Subscript):
            key = target.slice.value if isinstance(target.slice, ast.Constant) else None
            if self.resolve(target.value) == "os.environ" and key != "TORCH_CUDA_ARCH_LIST":
                return [Violation("tampering", target.lineno, f"sets the environment variable {key or '(computed)'}: "
                                                              "only TORCH_CUDA_ARCH_LIST may be set")]
            return []
        if isinstance(target, ast.Attribute):
            root = target
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.module_names:
                message = f"assigns to {self.resolve(target)}: monkey-patching modules is not allowed"
                return [Violation("tampering", target.lineno, message)]
        return []

    def _check_reference(self, node: ast.Attribute | ast.Name, outermost: bool) -> list[Violation]:
        out = []
        line = node.lineno
        if isinstance(node, ast.Attribute) and node.attr in TAMPER_ATTRIBUTES:
            out.append(Violation("tampering", line, f"uses .{node.attr}: introspection of frames, globals and "
                                                    "classes is not allowed"))
        if isinstance(node, ast.Name) and node.id in ("__builtins__", "__import__", "__loader__"):
            out.append(Violation("tampering", line, f"uses {node.id}"))
        # Only the outermost attribute of a chain is judged, so torch.cuda.Event.record reports once.
        name = self.resolve(node) or ""
        if not outermost or (isinstance(node, ast.Name) and node.id not in self.aliases):
            return out
        hit = _matches(name, STREAM_NAMES)
        if hit:
            out.append(Violation("streams-threads", line, f"uses {name}: work on another stream (or a captured "
                                                          "graph) escapes the timed stream"))
        hit = _matches(name, TAMPER_NAMES)
        if hit:
            out.append(Violation("tampering", line, f"uses {name}: timing, patching, loading and process "
                                                    "control belong to the harness"))
        return out

    def _check_call(self, node: ast.Call) -> list[Violation]:
        func = node.func
        if self.resolve(func) in ("contextlib.suppress", "suppress"):
            return [Violation("no-fallback", node.lineno, "suppress() hides errors like try/except")]
        if not isinstance(func, ast.Name) or func.id in self.aliases:
            return []
        first = node.args[0] if node.args else None
        if func.id in TAMPER_BUILTINS:
            return [Violation("tampering", node.lineno, f"calls {func.id}(): dynamic code, files and input are "
                                                        "not allowed")]
        if func.id in ("setattr", "delattr") and not (isinstance(first, ast.Name) and first.id == "self"):
            return [Violation("tampering", node.lineno, f"calls {func.id}() on something other than self")]
        if func.id == "getattr" and isinstance(first, (ast.Name, ast.Attribute)):
            root = first
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.module_names:
                return [Violation("tampering", node.lineno, f"calls getattr() on {self.resolve(first)}: look "
                                                            "functions up by name, not dynamically")]
        return []

    # ------------------------------------------------------------ forbid_torch_compute: what forward reaches

    def check_forward_compute(self) -> list[Violation]:
        cls = self.model_new
        assert cls is not None
        methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        layers, ops, exts, submodules = self._self_attributes(cls)
        out: list[Violation] = []
        queue: list[tuple[str, ast.AST]] = [("ModelNew.forward", methods["forward"])] if "forward" in methods else []
        seen: set[int] = set()
        while queue:
            where, func = queue.pop(0)
            if id(func) in seen:
                continue
            seen.add(id(func))
            local_exts, local_layers, local_ops = set(), set(), {}
            for node in ast.walk(func):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    attr = _self_attr(node.value)
                    value = self.resolve(node.value) or ""
                    if attr in exts or (isinstance(node.value, ast.Name) and node.value.id in self.extensions):
                        local_exts.add(node.targets[0].id)
                    elif attr in layers:
                        local_layers.add(node.targets[0].id)
                    elif value.startswith("torch.") and value not in TORCH_ALLOWED_CALLS:
                        local_ops[node.targets[0].id] = value  # `mm = torch.mm` inside the method
                elif isinstance(node, (ast.For, ast.comprehension)) and _self_attr(node.iter) in layers:
                    local_layers |= {t.id for t in ast.walk(node.target) if isinstance(t, ast.Name)}
            for node in ast.walk(func):
                line = getattr(node, "lineno", 0)

                def flag(what: str, line: int = line, where: str = where) -> None:
                    out.append(Violation(
                        "torch-compute", line,
                        f"{where} {what}: this task forbids PyTorch compute in ModelNew.forward "
                        "(rules.forbid_torch_compute); compute in your own kernels (allocation, views, casts "
                        "and metadata are allowed)",
                    ))

                if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
                    flag("uses the @ operator (a PyTorch matmul)")
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                name = self.resolve(f)
                attr = _self_attr(f)
                if name and name.startswith("torch.") and not name.startswith("torch.utils.cpp_extension."):
                    if name not in TORCH_ALLOWED_CALLS:
                        flag(f"calls {name}()")
                elif attr is not None:
                    if attr in layers:
                        flag(f"calls the nn layer self.{attr} ({layers[attr]}, created in __init__)")
                    elif attr in ops:
                        flag(f"calls self.{attr}, which is {ops[attr]}")
                    elif attr in methods:
                        queue.append((f"ModelNew.{attr} (called from forward)", methods[attr]))
                    elif attr in submodules:
                        queue.append((f"{submodules[attr]}.forward (self.{attr})", self._forward_of(submodules[attr])))
                elif isinstance(f, ast.Subscript) and _self_attr(f.value) in layers:
                    flag(f"calls an element of the nn layer container self.{_self_attr(f.value)}")
                elif isinstance(f, ast.Name):
                    if f.id in local_layers:
                        flag(f"calls the nn layer {f.id} (from a layer container)")
                    elif f.id in local_ops:
                        flag(f"calls {local_ops[f.id]}()")
                    elif f.id in self.functions:
                        queue.append((f"{f.id}() (called from forward)", self.functions[f.id]))
                    elif f.id in self.classes and f.id != "ModelNew":
                        queue.append((f"{f.id}.forward", self._forward_of(f.id)))
                elif isinstance(f, ast.Attribute):
                    receiver = f.value
                    receiver_attr = _self_attr(receiver)
                    if receiver_attr in layers:
                        flag(f"calls .{f.attr}() of the nn layer self.{receiver_attr}")
                    elif isinstance(receiver, ast.Name) and receiver.id in self.classes \
                            and f.attr in ("apply", "forward"):
                        queue.append((f"{receiver.id}.forward", self._forward_of(receiver.id)))
                    elif self._is_extension(receiver, exts, local_exts):
                        continue
                    elif isinstance(receiver, ast.Name) and receiver.id in self.module_names:
                        continue  # math.sqrt(d), a module other than torch (torch.* was judged above)
                    elif f.attr in COMPUTE_OPS or (f.attr.startswith("__") and f.attr.endswith("__")):
                        flag(f"calls the tensor method .{f.attr}()")
        return out

    def _forward_of(self, class_name: str) -> ast.AST:
        cls = self.classes.get(class_name)
        if cls is None:
            return ast.Pass()
        return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), ast.Pass())

    def _is_extension(self, node: ast.AST, exts: set[str], local_exts: set[str]) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.extensions or node.id in local_exts
        return _self_attr(node) in exts

    def _self_attributes(self, cls: ast.ClassDef) -> tuple[dict[str, str], dict[str, str], set[str], dict[str, str]]:
        """self.X assignments anywhere in ModelNew: nn layers, torch ops, extensions, the file's own modules."""
        layers: dict[str, str] = {}
        ops: dict[str, str] = {}
        exts: set[str] = set()
        submodules: dict[str, str] = {}
        for node in ast.walk(cls):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                attr = _self_attr(target)
                if attr is None:
                    continue
                value = node.value
                if isinstance(value, ast.Call):
                    made = self.resolve(value.func) or ""
                    if self._is_builder_call(value):
                        exts.add(attr)
                    elif made.startswith("torch.nn.") and made.split(".")[-1][:1].isupper() \
                            and made not in PARAMETER_HOLDERS:
                        layers[attr] = made.replace("torch.nn.", "nn.", 1)
                    elif isinstance(value.func, ast.Name) and value.func.id in self.classes:
                        submodules[attr] = value.func.id
                elif isinstance(value, ast.Name) and value.id in self.extensions:
                    exts.add(attr)
                else:
                    made = self.resolve(value) or ""
                    if made.startswith("torch.") and made not in TORCH_ALLOWED_CALLS:
                        ops[attr] = made
        return layers, ops, exts, submodules


def _self_attr(node: ast.AST) -> str | None:
    """'X' for `self.X`, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _check_cpp_strings(cand: _Candidate, forbid_torch_compute: bool) -> list[Violation]:
    """The rules inside the C++/CUDA sources: every string literal except docstrings, comments removed."""
    docstrings = set()
    for node in ast.walk(cand.tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    rules: list[tuple[str, str, str]] = []  # (rule, regex, what it means)
    rules += [("streams-threads", p, "uses another stream, a host thread or a host callback")
              for p in CPP_STREAM_PATTERNS]
    rules += [("tampering", p, "reaches into Python or the clock") for p in CPP_TAMPER_PATTERNS]
    rules += [("tampering", rf"(?<![\w.>]){re.escape(n)}\s*\(", "times itself; timing belongs to the harness")
              for n in TIMING]
    rules += [("tampering", rf"(?<![\w.>:]){re.escape(n)}\s*\(", "touches processes, files or the environment")
              for n in SYSTEM]
    rules += [("tampering", rf"\bstd\s*::\s*{re.escape(n)}\b", "touches threads or files") for n in SYSTEM_TYPES]
    rules += [("tampering", rf"\b{re.escape(n)}\s*\(", "controls the device; the harness owns it")
              for n in DEVICE_CONTROL]
    if forbid_torch_compute:
        ops = "|".join(re.escape(o) for o in COMPUTE_OPS)
        what = "calls a PyTorch compute op in C++: this task forbids PyTorch compute (rules.forbid_torch_compute)"
        rules += [
            ("torch-compute", rf"\b(?:torch|at)\s*::\s*(?:native\s*::\s*)?(?:{ops})\s*\(", what),
            ("torch-compute", r"\btorch\s*::\s*nn\s*::\s*functional\s*::\s*\w+\s*\(", what),
            ("torch-compute", rf"\.\s*(?:{ops})\s*\(", what),
        ]
    compiled = [(rule, re.compile(rx), what) for rule, rx, what in rules]
    out = []
    for node in ast.walk(cand.tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docstrings:
            continue
        if "\n" not in node.value and "(" not in node.value and "#" not in node.value and "::" not in node.value:
            continue  # names and flags, not code
        code = strip_comments(node.value, blank_strings=True)
        for rule, rx, what in compiled:
            for m in rx.finditer(code):
                line = node.lineno + code.count("\n", 0, m.start())
                out.append(Violation(rule, line, f"{m.group(0).strip()} in a C++/CUDA source: {what}"))
    return out


# ================================================================ evaluation

_MiB = 1024 * 1024
# The build runs ninja, g++ and nvcc (cicc, ptxas) under the candidate's import: more files and processes.
BUILD_LIMITS = sandbox.Limits(file_bytes=1024 * _MiB, processes=4096, isolate_network=True)
PROFILE_NOTE = "profile skipped: ncu is not wired for pytorch tasks yet (torch_harness.py --mode profile is)"
STREAM_GAP_REVIEW = 1.5  # synchronized time / current-stream time above this: work escaped the timed stream
# An import that failed only because the build hides the GPU: the check imports it again under the lock.
_NO_DEVICE_TEXT = ("no cuda gpus are available", "found no nvidia driver", "cuda driver initialization failed",
                   "no kernel image", "cudaerrornodevice", "invalid device ordinal")


def torch_version() -> str:
    """PyTorch's version in the worker's Python, read without importing torch ('' when absent)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return ""


def extension_cache_root(options: EvalOptions) -> Path:
    base = options.build_cache or os.environ.get("KW_BUILD_CACHE")
    return Path(base) / "torch-extensions" if base else Path.home() / ".cache" / "kernelweb" / "torch-extensions"


def candidate_build_key(source: str, device: str, arch_list: str) -> str:
    """The extension cache folder of a candidate: a hash of every literal in it (its C++/CUDA sources, the
    extension's name and flags), the device, the arch list and torch. Candidates that differ only in Python
    share a build; different sources never share a folder, so concurrent evaluations cannot load each
    other's library (torch versions a rebuilt extension per process only)."""
    try:
        literals = [repr(n.value) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant)]
    except SyntaxError:
        literals = [source]
    parts = {"literals": literals, "device": device, "arch": arch_list, "torch": torch_version()}
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class ChildRun:
    """One torch_harness.py process: its JSON (when complete) and why it failed, if it did."""

    mode: str
    data: dict[str, Any] | None
    result: sandbox.SandboxResult
    crash: CrashInfo | None

    @property
    def ok(self) -> bool:
        return self.crash is None and self.data is not None


def _crash_of(res: sandbox.SandboxResult, data: dict[str, Any] | None, has_output: bool) -> CrashInfo | None:
    """worker.engine.harness.classify_crash on this harness's JSON: a checkpoint says where it died, an error
    JSON what Python raised (CUDA errors are recognised from its text)."""
    error = data.get("error") if data is not None else None
    if data is None:
        adapted = None
    elif data.get("incomplete"):
        adapted = {"error": {"kind": "incomplete", "phase": data.get("phase")}}
    elif isinstance(error, str) and error:
        phase = f" (during {data['phase']})" if data.get("phase") else ""
        adapted = {"error": {"kind": data.get("kind") or "python_exception", "message": error + phase}}
    else:
        adapted = {k: v for k, v in data.items() if k != "error"}  # a complete result
    crash = classify_crash(res, adapted, has_output)
    if crash is not None and data and data.get("traceback"):
        crash = replace(crash, stderr_tail=(data["traceback"][-3000:] + "\n" + res.stderr[-3000:]).strip())
    return replace(crash, size_index=0) if crash is not None else None


class _Context(EvalContext):
    """A KernelBench evaluation: where the modules run, the candidate file, its extension folder, the arch list."""

    def __init__(
        self,
        spec: PyTorchTaskSpec,
        precision: str,
        options: EvalOptions | None,
        chain: tc.Toolchain | None,
        work_dir: Path | str | None,
        progress: Progress | None,
    ):
        super().__init__(spec, precision, options, chain, work_dir, progress)
        self.device = self.options.torch_device
        self.candidate_path: Path | None = None
        self.extensions_dir: Path | None = None
        self.arch_list = _arch_list(self.chain) if self.device == "cuda" else ""

    def evaluation_fields(self) -> dict[str, Any]:
        return {"seeds": self.options.torch_trials, "iters": self.options.iters,
                "toolchain": {**self.chain.describe(), "torch": torch_version() or "missing",
                              "torch_device": self.device}}

    def size(self, **fields: Any) -> SizeResult:
        params = dict(self.spec.sizes[0]) if self.spec.sizes else {}
        return SizeResult(0, params, self.spec.complexity_of(params), **fields)

    def env(self, *, hide_gpu: bool = False, compile_cache: bool = False) -> dict[str, str]:
        # ninja lives beside the worker's Python (a venv's bin); torch's JIT build runs it from PATH.
        env = {"PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "/usr/bin:/bin")])}
        if self.extensions_dir is not None:
            env["TORCH_EXTENSIONS_DIR"] = str(self.extensions_dir)
        if self.arch_list:
            env["TORCH_CUDA_ARCH_LIST"] = self.arch_list  # the same in every step, so the check never rebuilds
        if self.chain.nvcc:
            env["CUDA_HOME"] = str(Path(self.chain.nvcc).resolve().parent.parent)
        if hide_gpu:
            env["CUDA_VISIBLE_DEVICES"] = ""  # the build never holds the GPU lock, so it may not use the GPU
        if compile_cache:
            root = extension_cache_root(self.options).parent
            env["TORCHINDUCTOR_CACHE_DIR"] = str(root / "torchinductor")
            env["TRITON_CACHE_DIR"] = str(root / "triton")
        return env

    def child(
        self,
        mode: str,
        timeout_s: float,
        *,
        impl: str = "candidate",
        name: str | None = None,
        lock: bool = True,
        hide_gpu: bool = False,
        prefix: list[str] | None = None,
        trials: int | None = None,
        extra: list[str] | None = None,
    ) -> ChildRun:
        o, tol = self.options, self.spec.tolerance(self.precision)
        tag = name or f"{mode}-{impl}"
        out = self.work / f"{tag}.json"
        out.unlink(missing_ok=True)
        argv = [
            *(prefix or []), sys.executable, "-I", "-B", str(HARNESS), "--mode", mode,
            "--task-dir", str(self.spec.directory.resolve()), "--model", self.spec.model_file, "--impl", impl,
            "--precision", self.precision, "--device", self.device, "--seed-base", str(o.seed_base),
            "--trials", str(trials or o.torch_trials), "--warmup", str(o.warmup), "--iters", str(o.iters),
            "--atol", repr(tol.atol), "--rtol", repr(tol.rtol), "--out", str(out), *(extra or []),
        ]
        if self.candidate_path is not None:
            argv += ["--candidate", str(self.candidate_path)]
        cpus = os.cpu_count() or 2
        base = BUILD_LIMITS if mode == "build" else HARNESS_LIMITS
        # RLIMIT_CPU counts every thread: a CPU-side torch op on all cores must not trip it before the wall clock.
        limits = replace(base, cpu_seconds=int(timeout_s * max(2, cpus)) + 10)
        env = self.env(hide_gpu=hide_gpu, compile_cache=impl == "compile")

        def run() -> sandbox.SandboxResult:
            return sandbox.run(argv, self.work, timeout_s, env_extra=env, limits=limits, name=tag)

        if lock:
            with self.gpu():
                res = run()
        else:
            res = run()
        data = read_result(out) if out.is_file() else None
        return ChildRun(mode, data, res, _crash_of(res, data, out.is_file()))


def _arch_list(chain: tc.Toolchain) -> str:
    """TORCH_CUDA_ARCH_LIST for the build: the GPU's compute capability, else the toolchain's target arch."""
    if chain.gpu and chain.gpu.compute_capability:
        return chain.gpu.compute_capability
    digits = re.sub(r"\D", "", chain.arch) or "90"
    return f"{digits[:-1]}.{digits[-1]}"


def _guarded(ctx: _Context, kind: str, steps: Callable[[], Evaluation]) -> Evaluation:
    """The shared guard (worker.engine.context.guarded), after two checks of this backend's own."""

    def checked() -> Evaluation:
        if ctx.precision not in ctx.spec.precisions:
            return ctx.base(verdict=Verdict.REJECTED, kind=kind,
                            reason=f"{ctx.spec.name} has no {ctx.precision} variant ({', '.join(ctx.spec.precisions)})")
        if not torch_version():
            failure = CompileResult("harness", False, "import torch", f"PyTorch is not installed for {sys.executable}")
            return ctx.base(verdict=Verdict.COMPILE_ERROR, kind=kind, compile=failure,
                            reason="PyTorch is not installed in the worker's Python: pytorch tasks need it "
                                   "(a worker problem, not the candidate's)")
        return steps()

    return guarded(ctx, kind, checked)


def _no_gpu(ctx: _Context) -> str | None:
    if ctx.device == "cuda" and ctx.chain.gpu is None:
        return f"this run needs a GPU and none is present ({ctx.chain.gpu_reason})"
    return None


# ---------------------------------------------------------------- public entry points


def evaluate_pytorch(
    spec: PyTorchTaskSpec,
    precision: str,
    candidate_source: str,
    flags: str | None = None,
    options: EvalOptions | None = None,
    *,
    compile_only: bool = False,
    chain: tc.Toolchain | None = None,
    work_dir: Path | str | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """A candidate ModelNew against the task's Model: static checks, build, check, time, score."""
    ctx = _Context(spec, precision, options, chain, work_dir, progress)
    return _guarded(ctx, "candidate", lambda: _evaluate(ctx, candidate_source, flags, compile_only))


def evaluate_pytorch_baseline(
    spec: PyTorchTaskSpec,
    precision: str,
    options: EvalOptions | None = None,
    *,
    chain: tc.Toolchain | None = None,
    work_dir: Path | str | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """Round 0: time the eager Model alone (and torch.compile(Model) where asked)."""
    ctx = _Context(spec, precision, options, chain, work_dir, progress)
    return _guarded(ctx, "baseline", lambda: _evaluate_baseline(ctx))


def validate_pytorch(
    spec: PyTorchTaskSpec,
    precision: str,
    options: EvalOptions | None = None,
    *,
    chain: tc.Toolchain | None = None,
    work_dir: Path | str | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """Is the task's Model a usable reference (kind='validate')? It must run at the task's shapes, give the
    same output twice under one seed (within the tolerance; bitwise is noted), give finite outputs, and agree
    with a float64 run on the CPU within the tolerance. That last run is skipped, with a note, when it does
    not finish within options.check_timeout_s or the outputs exceed 256 MiB: a CPU float64 pass over a large
    convolution can take far longer than the GPU work it checks."""
    ctx = _Context(spec, precision, options, chain, work_dir, progress)
    return _guarded(ctx, "validate", lambda: _validate(ctx))


# ---------------------------------------------------------------- the steps


def _evaluate(ctx: _Context, source: str, flags: str | None, compile_only: bool) -> Evaluation:
    spec, precision, o = ctx.spec, ctx.precision, ctx.options
    notes: list[str] = []
    if flags and flags.strip():
        notes.append("compiler flags are ignored for pytorch tasks: a candidate passes its own through "
                     "load_inline(extra_cflags=..., extra_cuda_cflags=...)")
    report = check_candidate(source, spec)
    if not report.ok:
        msgs = report.messages()
        return ctx.base(verdict=Verdict.REJECTED, static_violations=msgs, notes=tuple(notes),
                        reason=msgs[0] + (f" (+{len(msgs) - 1} more)" if len(msgs) > 1 else ""))

    ctx.candidate_path = ctx.work / "candidate.py"
    ctx.candidate_path.write_text(source, encoding="utf-8")
    ctx.extensions_dir = extension_cache_root(o) / candidate_build_key(source, ctx.device, ctx.arch_list)
    ctx.extensions_dir.mkdir(parents=True, exist_ok=True)
    built = _build(ctx, notes)
    if isinstance(built, Evaluation):
        no_gpu = _no_gpu(ctx)
        if no_gpu and not compile_only:
            # Without a GPU the worker may hold a CPU-only PyTorch that cannot build CUDA extensions at all:
            # the missing GPU is the reason to report, not the candidate.
            return replace(built, verdict=Verdict.NO_GPU, reason=f"{no_gpu} (the build failed here too: "
                           f"{built.reason.removeprefix('candidate failed to compile: ')})")
        return built
    if compile_only:
        where = "" if ctx.chain.gpu or ctx.device != "cuda" else f"; no GPU is present ({ctx.chain.gpu_reason})"
        return ctx.base(verdict=Verdict.OK, kind="compile_only", compile=built, notes=tuple(notes),
                        reason=f"built and imported{where}, nothing was run")
    no_gpu = _no_gpu(ctx)
    if no_gpu:
        return ctx.base(verdict=Verdict.NO_GPU, reason=no_gpu, compile=built, notes=tuple(notes))

    ctx.progress(f"{spec.name}/{precision}: check ModelNew against Model ({o.torch_trials} seeded trials)")
    with ctx.phase("check"):
        run = ctx.child("check", o.check_timeout_s)
    if not run.ok:
        return _crashed(ctx, run, compile=built, notes=notes)
    checked = _checked_size(ctx, run.data or {})
    if not checked.correct:
        return ctx.base(verdict=Verdict.INCORRECT, reason=_mismatch_reason(ctx, checked), sizes=(checked,),
                        compile=built, notes=tuple(notes))

    baseline, cached = _times(ctx, "model")
    if isinstance(baseline, Evaluation):
        return replace(baseline, kind="candidate", compile=built, notes=tuple(notes) + baseline.notes)
    ctx.progress(f"{spec.name}/{precision}: time ModelNew ({o.warmup} warm-up + {o.iters} timed calls)")
    with ctx.phase("time"):
        run = ctx.child("time", o.time_timeout_s)
    if not run.ok:
        return _crashed(ctx, run, compile=built, notes=notes, sizes=(checked,))
    data = run.data or {}
    candidate = TimingStats.from_dict(data["timing"])
    reference = _reference_times(ctx, notes)

    size_flags: list[str] = []
    gap = data.get("stream_gap")
    if isinstance(gap, (int, float)) and gap > STREAM_GAP_REVIEW:
        size_flags.append(f"work outside the current stream: timed with a device-wide synchronize "
                          f"(synchronized time is {gap:.1f}x the current stream's)")
    scored = score_sizes([replace(checked, baseline=baseline, candidate=candidate, reference=reference,
                                  flags=tuple(size_flags))])
    flags = tuple(dict.fromkeys([*size_flags, *scored.flags]))  # score_sizes reports only the flags it adds
    return ctx.base(
        verdict=Verdict.OK,
        reason=f"correct on {o.torch_trials} seeded trials",
        sizes=scored.sizes,
        score=scored.score,
        geomean_speedup=scored.geomean,
        expert_speedup=scored.expert,
        flags=flags,
        notes=tuple(notes) + ((PROFILE_NOTE,) if o.profile != "none" else ()),
        compile=built,
        baseline_cached=cached,
    )


def _build(ctx: _Context, notes: list[str]) -> CompileResult | Evaluation:
    """Import the candidate in a child (load_inline compiles), with the GPU hidden and no GPU lock."""
    o = ctx.options
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: build the candidate's extension (torch {torch_version()})")
    with ctx.phase("compile"):
        run = ctx.child("build", o.compile_timeout_s, lock=False, hide_gpu=ctx.device == "cuda")
    res, data = run.result, run.data or {}
    command = "torch.utils.cpp_extension.load_inline"
    output = res.output.strip()
    if res.timed_out:
        log = output + f"\n[the build was stopped after {o.compile_timeout_s:.0f} s]"
        failure = CompileResult("candidate", False, command, log, seconds=res.wall_s)
        return ctx.base(verdict=Verdict.COMPILE_ERROR, compile=failure, notes=tuple(notes),
                        reason=f"the candidate did not finish building within {o.compile_timeout_s:.0f} s")
    if "ok" in data and res.returncode == 0:
        if data["ok"]:
            return CompileResult("candidate", True, command, output, seconds=res.wall_s)
        error = str(data.get("error") or "")
        log = "\n\n".join(x for x in (error[-128 * 1024 :], output, data.get("traceback", "")) if x)
        failure = CompileResult("candidate", False, command, log, seconds=res.wall_s)
        if data.get("kind") == "compile_error":
            return ctx.base(verdict=Verdict.COMPILE_ERROR, compile=failure, notes=tuple(notes),
                            reason="candidate failed to compile: " + _first_error(error + "\n" + output))
        if ctx.device == "cuda" and any(t in error.lower() for t in _NO_DEVICE_TEXT):
            notes.append("the candidate uses the GPU at import time; it was imported again under the GPU lock")
            return CompileResult("candidate", True, command, log, seconds=res.wall_s)
        return ctx.base(verdict=Verdict.COMPILE_ERROR, compile=failure, notes=tuple(notes),
                        reason=f"the candidate module failed to import: {error.splitlines()[0] if error else '?'}")
    crash = run.crash or CrashInfo("missing_output", "the build reported nothing")
    failure = CompileResult("candidate", False, command, output, seconds=res.wall_s)
    return ctx.base(verdict=Verdict.RUNTIME_ERROR, compile=failure, crash=crash, notes=tuple(notes),
                    reason=f"{crash.kind} while importing the candidate: {crash.message}")


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if re.search(r"\berror\b", line, re.IGNORECASE) and "Error building extension" not in line:
            return line.strip()[:500]
    return next((ln.strip()[:500] for ln in text.splitlines() if ln.strip()), "")


def _checked_size(ctx: _Context, data: dict[str, Any]) -> SizeResult:
    mismatch = data.get("first_mismatch")
    if isinstance(mismatch, dict):
        tol = ctx.spec.tolerance(ctx.precision)
        mismatch = {**mismatch, "atol": tol.atol, "rtol": tol.rtol}
    return ctx.size(
        correct=bool(data.get("correct")),
        inputs_unchanged=data.get("inputs_unchanged"),
        first_mismatch=mismatch,
        changed_input=data.get("changed_input"),
    )


def _mismatch_reason(ctx: _Context, size: SizeResult) -> str:
    m = size.first_mismatch or {}
    where = f"trial {m.get('trial')} (seed {m.get('seed')})" if "trial" in m else "the check"
    if size.inputs_unchanged is False:
        return f"at {where} the candidate modified its inputs: {size.changed_input}"
    if "index" in m:
        position = "[" + ", ".join(str(p) for p in m.get("position", [m.get("index")])) + "]"
        return (
            f"at {where}: {m.get('output')}{position} expected {_g(m.get('expected'))} got {_g(m.get('got'))}; "
            f"{m.get('mismatches')} of {m.get('total')} elements out of tolerance "
            f"(atol={m.get('atol')}, rtol={m.get('rtol')})"
        )
    return f"at {where}: {m.get('output', 'output')} {m.get('error') or 'is out of tolerance'}"


def _g(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _crashed(
    ctx: _Context,
    run: ChildRun,
    *,
    compile: CompileResult | None = None,
    notes: list[str] | tuple[str, ...] = (),
    sizes: tuple[SizeResult, ...] | None = None,
    kind: str = "candidate",
    who: str = "",
) -> Evaluation:
    crash = run.crash or CrashInfo("missing_output", "no result JSON", size_index=0)
    memcheck = ""
    python_level = crash.kind in ("python_exception", "timeout", "missing_output", "nonzero_exit", "not_started",
                                  "out_of_memory")
    if kind == "candidate" and ctx.device == "cuda" and not python_level:
        memcheck = _memcheck(ctx)
    verdict = Verdict.TIMEOUT if crash.kind == "timeout" else Verdict.RUNTIME_ERROR
    return ctx.base(
        verdict=verdict,
        kind=kind,
        reason=f"{who}{crash.kind} during {run.mode}: {crash.message}",
        crash=crash,
        memcheck_log=memcheck,
        sizes=sizes if sizes is not None else (ctx.size(),),
        compile=compile,
        notes=tuple(notes),
    )


def _memcheck(ctx: _Context) -> str:
    """compute-sanitizer memcheck over one check trial: where a device fault happened, for the Debug agent."""
    if not ctx.chain.sanitizer:
        return "compute-sanitizer not found; no memcheck log"
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: compute-sanitizer memcheck of one check trial")
    prefix = [ctx.chain.sanitizer, "--tool", "memcheck", "--print-limit", "30", "--error-exitcode", "86"]
    with ctx.phase("memcheck"):
        run = ctx.child("check", ctx.options.memcheck_timeout_s, name="memcheck", prefix=prefix, trials=1)
    log = run.result.output
    if run.result.timed_out:
        log += f"\n[memcheck stopped after {ctx.options.memcheck_timeout_s:.0f} s]"
    return log[-64 * 1024 :]


# ---------------------------------------------------------------- timing of Model and torch.compile (cached)


def timing_cache_key(ctx: _Context, impl: str) -> str:
    o = ctx.options
    parts = {
        "backend": "pytorch",
        "task": ctx.spec.name,
        "precision": ctx.precision,
        "impl": impl,
        "device": ctx.device,
        "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "",
        "torch": torch_version(),
        "model": hashlib.sha256(ctx.spec.model_path.read_bytes()).hexdigest(),
        "harness": hashlib.sha256(HARNESS.read_bytes()).hexdigest(),
        "warmup": o.warmup,
        "iters": o.iters,
        "seed_base": o.seed_base,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _times(ctx: _Context, impl: str) -> tuple[TimingStats | Evaluation, bool]:
    """The eager Model's (impl='model') or torch.compile's (impl='compile') timing, from the cache when it
    was measured for this task, precision, GPU model, torch, model file and harness."""
    o = ctx.options
    path = timing_cache_dir(o) / f"{ctx.spec.name}-{ctx.precision}-{impl}-{timing_cache_key(ctx, impl)}.json"
    what = "torch.compile(Model)" if impl == "compile" else "the eager Model"
    if o.use_baseline_cache and path.is_file():
        try:
            stats = TimingStats.from_dict(json.loads(path.read_text(encoding="utf-8"))["timing"])
            ctx.progress(f"{ctx.spec.name}/{ctx.precision}: {what} times from cache")
            return stats, True
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable cache entry: time again
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: time {what} ({o.warmup} warm-up + {o.iters} timed calls)")
    with ctx.phase("time_reference" if impl == "compile" else "time_baseline"):
        run = ctx.child("time", o.time_timeout_s, impl=impl)
    if not run.ok or "timing" not in (run.data or {}):
        who = f"{what} failed while timing (a task problem, not the candidate's): "
        return _crashed(ctx, run, kind="baseline", who=who), False
    stats = TimingStats.from_dict(run.data["timing"])
    write_json_atomic(path, {"task": ctx.spec.name, "precision": ctx.precision, "impl": impl,
                             "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "", "env": run.data.get("env", {}),
                             "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "timing": stats.to_dict()})
    return stats, False


def _reference_times(ctx: _Context, notes: list[str]) -> TimingStats | None:
    """torch.compile(Model) as the expert reference, where the options or the task ask for it; a failure is a
    note, never a verdict."""
    if not (ctx.options.torch_compile or ctx.spec.compare_compile):
        return None
    stats, _ = _times(ctx, "compile")
    if isinstance(stats, Evaluation):
        notes.append(f"no torch.compile reference: {stats.reason}")
        return None
    return stats


def _evaluate_baseline(ctx: _Context) -> Evaluation:
    no_gpu = _no_gpu(ctx)
    if no_gpu:
        return ctx.base(verdict=Verdict.NO_GPU, kind="baseline", reason=no_gpu)
    baseline, cached = _times(ctx, "model")
    if isinstance(baseline, Evaluation):
        return baseline
    notes: list[str] = []
    reference = _reference_times(ctx, notes)
    scored = score_sizes([ctx.size(baseline=baseline, reference=reference)])
    if ctx.options.profile != "none":
        notes.append(PROFILE_NOTE)
    return ctx.base(verdict=Verdict.OK, kind="baseline", reason="eager Model timed", sizes=scored.sizes,
                    flags=scored.flags, baseline_cached=cached, notes=tuple(notes))


def _validate(ctx: _Context) -> Evaluation:
    o = ctx.options
    no_gpu = _no_gpu(ctx)
    if no_gpu:
        return ctx.base(verdict=Verdict.NO_GPU, kind="validate", reason=no_gpu)
    ctx.progress(f"{ctx.spec.name}/{ctx.precision}: validate the reference Model ({o.torch_trials} seeds, twice each)")
    saved = ctx.work / "reference-outputs.pt"
    with ctx.phase("check"):
        run = ctx.child("validate", o.check_timeout_s, impl="model", extra=["--save", str(saved)])
    if not run.ok:
        return _crashed(ctx, run, kind="validate", who="the reference Model failed: ")
    data = run.data or {}
    notes = list(data.get("notes", []))
    if not data.get("ok"):
        problems = list(data.get("problems", []))
        size = ctx.size(correct=False, first_mismatch={"error": "; ".join(problems)})
        return ctx.base(verdict=Verdict.INCORRECT, kind="validate", sizes=(size,), notes=tuple(notes),
                        reason="the reference Model is not usable: " + "; ".join(problems))
    agreed = "no CPU float64 comparison"
    if saved.is_file():
        ctx.progress(f"{ctx.spec.name}/{ctx.precision}: compare with a float64 run on the CPU")
        with ctx.phase("validate_cpu"):
            cpu = ctx.child("validate_cpu", o.check_timeout_s, impl="model", lock=False, hide_gpu=True,
                            name="validate-cpu", extra=["--load", str(saved)])
        if cpu.result.timed_out:
            notes.append(f"CPU float64 comparison skipped: it took longer than {o.check_timeout_s:.0f} s")
        elif not cpu.ok:
            notes.append(f"CPU float64 comparison skipped: {(cpu.crash.message if cpu.crash else '')[:300]}")
        elif not (cpu.data or {}).get("agrees"):
            mismatch = dict(cpu.data.get("first_mismatch") or {})
            tol = ctx.spec.tolerance(ctx.precision)
            mismatch.update(atol=tol.atol, rtol=tol.rtol)
            size = ctx.size(correct=False, first_mismatch=mismatch)
            detail = _mismatch_reason(ctx, size)
            return ctx.base(verdict=Verdict.INCORRECT, kind="validate", sizes=(size,), notes=tuple(notes),
                            reason=f"the reference on {ctx.device} disagrees with float64 on the CPU beyond the "
                                   f"tolerance ({detail}): widen [tolerance.{ctx.precision}] or check the task")
        else:
            agreed = "agrees with a float64 run on the CPU"
    return ctx.base(verdict=Verdict.OK, kind="validate", sizes=(ctx.size(correct=True),), notes=tuple(notes),
                    reason=f"the reference runs, is deterministic under a seed, gives finite outputs and {agreed}"
                    if agreed != "no CPU float64 comparison" else
                    "the reference runs, is deterministic under a seed and gives finite outputs (no CPU float64 "
                    "comparison)")
