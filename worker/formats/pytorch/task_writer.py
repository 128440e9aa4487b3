"""Writing a KernelBench task folder (the importer's, worker.importers): `spec.toml` beside the verbatim model
file, the TOML helpers and the category guessed from a problem's name and level."""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from worker.engine.taskspec import SpecError, Tolerance
from worker.formats.pytorch.spec import PyTorchTaskSpec, load_pytorch_spec, title_from


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
        f"title = {toml_string(title or title_from(name))}",
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
