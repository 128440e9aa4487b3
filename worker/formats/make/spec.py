"""task.yaml tasks (the CUDAHercules format): the spec's types and the limits every command and file
keeps (loading and validation in load.py; the decisions are listed in taskyaml.py)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from worker.engine.static_rules import SYSTEM
from worker.engine.taskspec import Tolerance

SUPPORTED_BACKENDS = ("class1_make", "make")
CORRECTNESS_MODES = ("stdout_or_exit", "exit_code", "stdout_regex")
METRICS = ("speedup_ref_over_sol",)
DEFAULT_TOLERANCE = (1e-2, 1e-2)
DEFAULT_TIMEOUT_S = 300.0
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Shell syntax that would mean something else to a shell than to an argv list.
SHELL_METACHARACTERS = {
    ";": "a command separator",
    "|": "a pipe",
    "&": "a background or '&&' operator",
    "$": "a variable or command expansion",
    "`": "a command substitution",
    "<": "a redirection",
    ">": "a redirection",
    "(": "a subshell",
    ")": "a subshell",
    "{": "a brace expansion",
    "}": "a brace expansion",
    "*": "a glob",
    "?": "a glob",
    "[": "a glob",
    "\n": "a line break",
    "\r": "a line break",
    "\x00": "a NUL byte",
}
# make options that cannot point the build elsewhere (no -C, -f, -I, --eval, ...).
_MAKE_OPTIONS = re.compile(r"^(-s|--silent|--quiet|-k|--keep-going|-B|--always-make|--no-print-directory"
                           r"|-w|--print-directory|-j\d*|--jobs(=\d+)?)$")
_MAKE_TARGET = re.compile(r"^[A-Za-z0-9_][\w.+-]*$")
# Variables the runner owns: the search path, the loader, the sandbox's own folders, which GPU, make's
# own configuration (MAKEFILES makes make read extra files), and ours.
_RESERVED_ENV = {"PATH", "HOME", "TMPDIR", "SHELL", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "MAKEFLAGS",
                 "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "MAKELEVEL"}
_RESERVED_ENV_PREFIXES = ("LD_", "PYTHON", "NVIDIA_", "KW_")
# Files the build makes (or a stale build left): never copied, never hashed, never task sources.
_BUILD_SUFFIXES = {".o", ".obj", ".a", ".so", ".exe", ".out", ".ptx", ".cubin", ".fatbin", ".d", ".pyc",
                   ".stdout", ".stderr"}
_BUILD_DIRS = {"build", "__pycache__"}
_RECIPE_FILES = {"task.yaml", "makefile", "gnumakefile"}
# Calls that reach files, processes, the environment or the network: a solution has no business there
# (reading the reference's output, inspecting the benchmark's settings). exit/abort stay allowed: naive
# solutions use them in their error checks.
SOLUTION_SYSTEM_CALLS = tuple(
    n for n in SYSTEM
    if n not in {"exit", "_exit", "_Exit", "abort", "quick_exit", "atexit", "signal", "sigaction", "raise",
                 "setjmp", "longjmp", "pthread_create"}
)


# ---------------------------------------------------------------- the spec


@dataclass(frozen=True)
class Hardware:
    min_sm: int  # e.g. 80, 90, 100: the oldest compute capability the task runs on
    tested_sms: tuple[int, ...] = ()
    required_features: tuple[str, ...] = ()


@dataclass(frozen=True)
class Runner:
    backend: str
    solution_file: str  # the file in the task folder a candidate replaces
    timeout_sec: float = DEFAULT_TIMEOUT_S
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = ""  # informational: the runner always works in its own copy


@dataclass(frozen=True)
class Build:
    cmd: str
    argv: tuple[str, ...]
    clean_cmd: str = ""
    clean_argv: tuple[str, ...] = ()


@dataclass(frozen=True)
class Success:
    exit_code: int | None = 0
    stdout_regex: str | None = None


@dataclass(frozen=True)
class Execute:
    cmd: str
    argv: tuple[str, ...]
    success: Success = field(default_factory=Success)


@dataclass(frozen=True)
class Correctness:
    mode: str = "stdout_or_exit"
    tolerances: Tolerance = field(default_factory=lambda: Tolerance(*DEFAULT_TOLERANCE, "default"))


@dataclass(frozen=True)
class TimeParser:
    kernel_time_ms_regex: str | None = None  # one capturing group: the solution's time in ms
    ref_time_ms_regex: str | None = None  # one capturing group: the expert reference's time in ms


@dataclass(frozen=True)
class Performance:
    enabled: bool = False
    parser: TimeParser = field(default_factory=TimeParser)
    metric: str = "speedup_ref_over_sol"


@dataclass(frozen=True)
class Source:
    repo: str = ""
    files: tuple[str, ...] = ()
    commit: str = ""
    license: str = ""


@dataclass(frozen=True)
class AntiCheat:
    blocked_patterns: tuple[str, ...] = ()
    required_patterns: tuple[str, ...] = ()


@dataclass(frozen=True)
class MakeTaskSpec:
    """A task.yaml task (backend "make"), with the members every backend's spec offers (see TaskSpec)."""

    backend: ClassVar[str] = "make"
    name: str
    title: str
    suite: str
    category: str
    description: str
    path: str  # the task.yaml
    task_id: str
    hardware: Hardware
    runner: Runner
    build: Build
    execute: Execute
    correctness: Correctness
    performance: Performance
    source: Source = field(default_factory=Source)
    anti_cheat: AntiCheat = field(default_factory=AntiCheat)
    precision: str = "fp32"  # the catalog column the task is filed under
    schema_version: int = 1
    task_class: int = 1
    domain: str = ""
    tags: tuple[str, ...] = ()

    @property
    def directory(self) -> Path:
        return Path(self.path).parent

    @property
    def precisions(self) -> tuple[str, ...]:
        return (self.precision,)

    @property
    def sizes(self) -> tuple[dict[str, float], ...]:
        return ()  # the harness decides its cases; they are known only after a run

    @property
    def complexity(self) -> str:
        return "1"

    def complexity_of(self, size: dict[str, float]) -> float:
        return 1.0  # every case weighs the same: P is the mean speedup

    @property
    def provenance(self) -> str:
        s = self.source
        if not (s.repo or s.files):
            return ""
        where = s.repo + (f" ({', '.join(s.files)})" if s.files else "")
        return where.strip() + (f" @ {s.commit}" if s.commit else "") + (f", {s.license}" if s.license else "")

    def tolerance(self, precision: str) -> Tolerance:
        return self.correctness.tolerances

    def baseline_source(self, precision: str) -> Path:
        """The shipped (naive) solution file the agents start from."""
        return self.directory / self.runner.solution_file

    def source_files(self, precision: str) -> tuple[Path, ...]:
        """Every file of the task folder, sorted; hidden files and build outputs left out."""
        return tuple(sorted(_task_files(self.directory)))

    def success_checks(self) -> tuple[str, ...]:
        """What a valid run shows, in words (for prompts): per correctness.mode."""
        s, mode = self.execute.success, self.correctness.mode
        out = []
        if mode in ("stdout_or_exit", "exit_code"):
            out.append(f"exit code {s.exit_code if s.exit_code is not None else 0}")
        if mode in ("stdout_or_exit", "stdout_regex") and s.stdout_regex:
            out.append(f"output matching /{s.stdout_regex}/")
        return tuple(out)


def _time(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _is_build_output(path: Path) -> bool:
    if path.suffix.lower() in _BUILD_SUFFIXES:
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"  # a linked program, whatever its name
    except OSError:
        return False


def _task_files(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _BUILD_DIRS)
        for name in files:
            path = Path(root) / name
            if not name.startswith(".") and path.is_file() and not _is_build_output(path):
                yield path
