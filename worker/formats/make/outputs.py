"""task.yaml outputs judged outside the program (correctness.outputs): the candidate's program and the shipped
solution's each write their outputs under $KW_OUTPUTS, and this module, in the worker, compares the two
folders. The program's own validator runs in the candidate's process and can be forged (a constructor or an
atexit handler can print its success line and end with status 0); these files can only be right by holding the
right numbers for the seeded inputs.

The candidate's folder is read as hostile: it is opened without following links (the folder itself may have
been swapped for a link to the shipped solution's), only regular files with one link are read, names are
plain, and the file count and bytes are bounded.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from worker.engine.taskspec import Tolerance

MAX_FILES = 256
MAX_BYTES = 2 << 30  # per side: a program writing more is refused rather than read
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_ITEM = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "bfloat16": "<u2", "int32": "<i4", "int64": "<i8",
         "uint8": "u1"}


class OutputsError(Exception):
    """The folder cannot be read as outputs; the message says why, for the verdict's reason."""


@dataclass(frozen=True)
class Mismatch:
    """The first difference between a run's outputs and the shipped solution's, in words."""

    file: str
    reason: str


def prepare(folder: Path) -> Path:
    """An empty outputs folder for a run (nothing left by an earlier one)."""
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    return folder


def read(folder: Path, dtype: str) -> dict[str, np.ndarray]:
    """{file name: its elements} of an outputs folder, refusing anything that is not a plain file of it."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise OutputsError("its outputs folder $KW_OUTPUTS is gone") from None
    except OSError as exc:
        raise OutputsError(f"its outputs folder is not a folder of its own ({exc.strerror})") from None
    try:
        names = sorted(os.listdir(dir_fd))
        if len(names) > MAX_FILES:
            raise OutputsError(f"it wrote {len(names)} files under $KW_OUTPUTS (at most {MAX_FILES})")
        arrays, total, width = {}, 0, np.dtype(_ITEM[dtype]).itemsize
        for name in names:
            if not _NAME.match(name):
                raise OutputsError(f"it wrote a file named {name[:60]!r} under $KW_OUTPUTS (plain names only)")
            data = _read_file(dir_fd, name, MAX_BYTES - total)
            total += len(data)
            if len(data) % width:
                raise OutputsError(f"{name} holds {len(data)} bytes, not a whole number of {dtype} elements")
            arrays[name] = np.frombuffer(data, dtype=_ITEM[dtype])
        return arrays
    finally:
        os.close(dir_fd)


def _read_file(dir_fd: int, name: str, budget: int) -> bytes:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as exc:
        raise OutputsError(f"{name} under $KW_OUTPUTS cannot be read as a file ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise OutputsError(f"{name} under $KW_OUTPUTS is not a plain file of its own (a link, a folder or "
                               "a device): outputs must be written, not pointed at")
        if info.st_size > budget:
            raise OutputsError(f"its files under $KW_OUTPUTS exceed {MAX_BYTES >> 20} MiB")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(info.st_size)
    finally:
        os.close(fd)


def _as_float(values: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":  # the upper half of a float32
        return (values.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return values.astype(np.float64)


def compare(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], dtype: str,
            tol: Tolerance) -> Mismatch | None:
    """None when every file the shipped solution wrote is there with the same elements (within `tol` for
    floating types, exactly for integers) and nothing else was written; else the first difference."""
    missing = sorted(set(expected) - set(got))
    if missing:
        return Mismatch(missing[0], f"it wrote no {missing[0]} under $KW_OUTPUTS; the shipped solution writes "
                                    f"{', '.join(sorted(expected))}")
    extra = sorted(set(got) - set(expected))
    if extra:
        return Mismatch(extra[0], f"it wrote {extra[0]} under $KW_OUTPUTS, which the shipped solution does not")
    for name in sorted(expected):
        g, e = got[name], expected[name]
        if g.size != e.size:
            return Mismatch(name, f"{name} holds {g.size} {dtype} elements; the shipped solution's {e.size}")
        if dtype.startswith("int") or dtype == "uint8":
            bad = np.flatnonzero(g != e)
            gv, ev = g, e
        else:
            gv, ev = _as_float(g, dtype), _as_float(e, dtype)
            with np.errstate(invalid="ignore", over="ignore"):
                close = np.abs(gv - ev) <= tol.atol + tol.rtol * np.abs(ev)
            close |= (gv == ev) | (np.isnan(gv) & np.isnan(ev))  # equal infinities, NaN where NaN is expected
            bad = np.flatnonzero(~close)
        if bad.size:
            i = int(bad[0])
            return Mismatch(name, f"{name}: {bad.size} of {e.size} elements differ from the shipped solution's "
                                  f"(atol {tol.atol:g}, rtol {tol.rtol:g}); first at index {i}: expected "
                                  f"{_shown(ev[i])}, got {_shown(gv[i])}")
    return None


def _shown(value) -> str:
    return f"{float(value):.8g}" if isinstance(value, np.floating) else str(value)
