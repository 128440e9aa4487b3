"""task.yaml tasks (the CUDAHercules format, its paper's Appendix B): schema, anti-cheat, make runner.

A task folder `tasks/<suite>/<name>/` holds `task.yaml`, a Makefile, a test harness that carries the
expert reference, and the naive solution file the agents rewrite. The runner follows the paper's
Figure 4: check the GPU requirement, refuse a solution that breaks the anti-cheat rules, copy the
folder into a scratch workspace and write the candidate over the solution file, run `build.cmd`
(no GPU lock), run `execute.cmd` (under the GPU lock, in the sandbox), validate by exit code and
stdout, and only then parse "Kernel time" / "Ref time" per case. The shipped solution's times, built
and run the same way (cached), give the speedup P; the harness's reference times give the
expert-relative speed s_t = t_ref / t_cand.

Decisions (each also said where it is enforced):
- Only `runner.backend` class1_make / make runs here; other CUDAHercules backends are refused.
- `build.cmd` and `clean_cmd` must run `make` (found on PATH, with a few harmless options): the task
  owns its recipe in its Makefile, and a cmake or nvcc line belongs in one. `execute.cmd` must start
  with `./` and stay inside the folder, so a bare name never resolves through PATH.
- Commands are argv lists (shlex), never a shell: shell metacharacters are refused at load time.
- `correctness.mode` stdout_or_exit checks every criterion `execute.success` gives (the exit code and,
  when set, the stdout regex): a harness that prints "Failed" and exits 0, or prints "Passed" and then
  fails, is never valid. `exit_code` and `stdout_regex` check only their one criterion.
- Each match of a time regex is one case, paired with the other regex's match of the same rank; the
  harness prints one (already averaged) time per case, so a case's TimingStats has samples=1.
- `clean_cmd` is validated but not run: every build starts from a fresh copy without build outputs.
- `runner.workdir` is informational; the runner always works in its own copy of the folder.
- The build also sees KW_ARCH (the worker's sm_XX) and the nvcc folder on PATH; the run sees
  runner.env plus KW_ATOL, KW_RTOL (correctness.tolerances), KW_SEED and KW_ARCH.
- Anti-cheat rules of ours beside the task's patterns (Appendix D's "global rules"), see check_solution.
- Phases carry worker/formats/cuda/evaluation.py's names, so GPU-time accounting needs no special case: compile (every
  make), check (the candidate's one run: validation and timing together), time_baseline (the shipped
  solution's run), lock_wait, total. Evaluation.seeds and iters are 1: the harness owns its repetitions.
- No Nsight Compute profile (options.profile is not used): the harness's kernels are not ours to name.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shlex
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

import yaml

from worker.engine import sandbox
from worker.engine import toolchain as tc
from worker.engine.context import EvalContext, EvalOptions, Progress, guarded, timing_cache_dir, write_json_atomic
from worker.engine.harness import HARNESS_LIMITS, classify_crash
from worker.engine.results import CompileResult, CrashInfo, Evaluation, SizeResult, TimingStats, Verdict
from worker.engine.scoring import geometric_mean, score_sizes
from worker.engine.static_rules import SYSTEM, SYSTEM_TYPES, StaticReport, Violation, strip_comments
from worker.engine.taskspec import CATEGORIES, PRECISIONS, SpecError, Tolerance

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


# ---------------------------------------------------------------- loading and validation


class _Doc:
    """Reads one task.yaml, raising SpecError(path, dotted field, what to fix) at the first problem."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, message: str) -> SpecError:
        return SpecError(self.path, where, message)

    def table(self, data: Any, where: str, known: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
        if not isinstance(data, dict):
            raise self.fail(where or "task.yaml", f"must be a mapping (key: value lines), got {_shown(data)}")
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise self.fail(
                _join(where, unknown[0]),
                f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; known keys here: "
                f"{', '.join(known)}",
            )
        for key in required:
            if key not in data or data[key] is None:
                raise self.fail(_join(where, key), "is required")
        return data

    def string(self, data: dict, key: str, where: str, default: str | None = None, empty: bool = False) -> str:
        value = data.get(key, default)
        if value is None and default is None and key not in data:
            raise self.fail(_join(where, key), "is required")
        if not isinstance(value, str) or (not empty and not value.strip()):
            raise self.fail(_join(where, key), f"must be a non-empty string (quote it), got {_shown(value)}")
        return value

    def integer(self, data: dict, key: str, where: str, default: int | None = None) -> int:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(_join(where, key), f"must be an integer, got {_shown(value)}")
        return value

    def number(self, data: dict, key: str, where: str, default: float) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            hint = ""
            if isinstance(value, str) and _time(value) is not None:
                hint = " (YAML reads 1e-5 as text: write 1.0e-5)"
            raise self.fail(_join(where, key), f"must be a number, got {_shown(value)}{hint}")
        return float(value)

    def strings(self, data: dict, key: str, where: str) -> tuple[str, ...]:
        value = data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(_join(where, key), f"must be a list of strings, got {_shown(value)}")
        return tuple(value)

    def regex(self, value: Any, where: str, groups: int | None = None) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"must be a regular expression string, got {_shown(value)}")
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise self.fail(where, f"{value!r} is not a valid regular expression: {exc}") from None
        if groups is not None and compiled.groups != groups:
            raise self.fail(
                where,
                f"{value!r} needs exactly {groups} capturing group (the time in ms), it has {compiled.groups}; "
                "write other groups as (?:...)",
            )
        return value


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _shown(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def _command(doc: _Doc, value: Any, where: str) -> tuple[str, ...]:
    """shlex argv of a command line that has no shell syntax in it."""
    if not isinstance(value, str) or not value.strip():
        raise doc.fail(where, f"must be a non-empty command string, got {_shown(value)}")
    for ch in value:
        if ch in SHELL_METACHARACTERS:
            raise doc.fail(
                where,
                f"shell metacharacter {ch!r} ({SHELL_METACHARACTERS[ch]}) is not allowed: commands run as an "
                "argv list, never through a shell; put pipelines and redirections in the Makefile",
            )
    try:
        argv = tuple(shlex.split(value))
    except ValueError as exc:
        raise doc.fail(where, f"cannot be split into arguments: {exc}") from None
    if not argv:
        raise doc.fail(where, "is empty")
    return argv


def _make_command(doc: _Doc, value: Any, where: str) -> tuple[str, ...]:
    argv = _command(doc, value, where)
    if argv[0] != "make":
        raise doc.fail(
            where,
            f"must run make, not {argv[0]!r}: the task's Makefile holds the recipe (wrap cmake or nvcc lines in it)",
        )
    for arg in argv[1:]:
        name, eq, val = arg.partition("=")
        if eq and _IDENT.match(name):
            if val.startswith("/") or ".." in PurePosixPath(val).parts:
                raise doc.fail(where, f"{arg!r}: a variable may not point outside the task folder")
            continue
        if arg.startswith("-"):
            if not _MAKE_OPTIONS.match(arg):
                raise doc.fail(
                    where,
                    f"make option {arg!r} is not allowed (the runner picks the folder and the Makefile); "
                    "allowed: -s, -k, -B, -jN, -w, --no-print-directory",
                )
            continue
        if not _MAKE_TARGET.match(arg):
            raise doc.fail(where, f"{arg!r} is not a make target name")
    return argv


def _execute_command(doc: _Doc, value: Any, where: str) -> tuple[str, ...]:
    argv = _command(doc, value, where)
    program = PurePosixPath(argv[0])
    if not argv[0].startswith("./") or ".." in program.parts or not program.parts or argv[0].endswith("/"):
        raise doc.fail(
            where,
            f"the program {argv[0]!r} must be a path inside the task folder written as ./name (e.g. ./test), "
            "so it never resolves through PATH",
        )
    for arg in argv[1:]:
        if arg.startswith("/") or ".." in PurePosixPath(arg).parts:
            raise doc.fail(where, f"argument {arg!r} points outside the task folder")
    return argv


def _guess_category(name: str, tags: tuple[str, ...]) -> str:
    text = " ".join((name, *tags)).lower()
    for pattern, category in (
        (r"gemm|matmul|gemv", "dense_linear_algebra"),
        (r"softmax|norm(?!al)", "normalization"),
        (r"attention|attn", "attention"),
        (r"fft", "signal"),
        (r"conv(?!ert)", "convolution"),
        (r"sort|scan", "scan_sort"),
        (r"spmv|spmm|sparse", "sparse_matrix"),
    ):
        if re.search(pattern, text):
            return category
    return "other"


_TOP_KEYS = ("schema_version", "task_id", "name", "task_class", "domain", "tags", "hardware", "runner", "build",
             "execute", "correctness", "performance", "source", "anti_cheat",
             "title", "category", "precision", "description")  # the last four are KernelWeb's extensions
_REQUIRED_TOP = ("schema_version", "task_id", "name", "hardware", "runner", "build", "execute", "correctness")


def load_make_spec(path: Path | str) -> MakeTaskSpec:
    """Read and validate one task.yaml; raise SpecError naming the file and the dotted field on any problem."""
    path = Path(path)
    doc = _Doc(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise doc.fail("file", "does not exist") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise doc.fail("yaml", f"is not valid YAML: {exc}") from None
    data = doc.table(data, "", _TOP_KEYS, _REQUIRED_TOP)

    version = doc.integer(data, "schema_version", "")
    if version != 1:
        raise doc.fail("schema_version", f"only schema_version 1 is supported, got {version}")
    name = doc.string(data, "name", "")
    if not _NAME.match(name):
        raise doc.fail("name", f"{name!r} must be letters, digits and underscores (^[A-Za-z0-9][A-Za-z0-9_]*$)")
    if path.parent.name != name:
        raise doc.fail("name", f"{name!r} must equal the task's folder name {path.parent.name!r}")
    task_id = doc.string(data, "task_id", "")
    task_class = doc.integer(data, "task_class", "", 1)
    if not 1 <= task_class <= 4:
        raise doc.fail("task_class", f"must be 1, 2, 3 or 4, got {task_class}")
    domain = doc.string(data, "domain", "", "", empty=True)
    tags = doc.strings(data, "tags", "")

    hardware = _hardware(doc, data["hardware"])
    runner = _runner(doc, data["runner"], path.parent)
    build = _build_section(doc, data["build"])
    execute = _execute_section(doc, data["execute"])
    if PurePosixPath(execute.argv[0]) == PurePosixPath(runner.solution_file):
        raise doc.fail("execute.cmd", "runs the solution file itself; it must run the program the build makes")
    correctness = _correctness(doc, data["correctness"])
    if correctness.mode == "stdout_regex" and not execute.success.stdout_regex:
        raise doc.fail("execute.success.stdout_regex", "is required when correctness.mode is stdout_regex")
    performance = _performance(doc, data.get("performance"))
    source = _source(doc, data.get("source"))
    anti_cheat = _anti_cheat(doc, data.get("anti_cheat"))

    title = doc.string(data, "title", "", name.replace("_", " ").title())
    category = data.get("category")
    if category is None:
        category = _guess_category(name, tags)
    elif category not in CATEGORIES:
        raise doc.fail("category", f"{category!r} is not one of {', '.join(CATEGORIES)}")
    precision = data.get("precision", "fp32")
    if precision not in PRECISIONS:
        raise doc.fail("precision", f"{precision!r} must be one of {', '.join(PRECISIONS)}")
    if "description" in data:
        description = doc.string(data, "description", "")
    elif (path.parent / "description.txt").is_file():
        description = (path.parent / "description.txt").read_text(encoding="utf-8", errors="replace").strip()
    else:
        about = ", ".join(tags) if tags else "CUDA"
        description = (f"{title}: a {domain + ' ' if domain else ''}task ({about}) of the {path.parent.parent.name} "
                       f"suite. Rewrite {runner.solution_file} so that the task's harness passes and runs faster.")

    return MakeTaskSpec(
        name=name, title=title, suite=path.parent.parent.name, category=category, description=description,
        path=str(path), task_id=task_id, hardware=hardware, runner=runner, build=build, execute=execute,
        correctness=correctness, performance=performance, source=source, anti_cheat=anti_cheat,
        precision=precision, schema_version=version, task_class=task_class, domain=domain, tags=tags,
    )


def _sm(doc: _Doc, value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 10 <= value <= 999:
        raise doc.fail(where, f"must be an SM number like 80, 90 or 100, got {_shown(value)}")
    return value


def _hardware(doc: _Doc, raw: Any) -> Hardware:
    data = doc.table(raw, "hardware", ("min_sm", "tested_sms", "required_features"), ("min_sm",))
    tested = data.get("tested_sms") or []
    if not isinstance(tested, list):
        raise doc.fail("hardware.tested_sms", f"must be a list of SM numbers, got {_shown(tested)}")
    return Hardware(
        min_sm=_sm(doc, data["min_sm"], "hardware.min_sm"),
        tested_sms=tuple(_sm(doc, v, f"hardware.tested_sms[{i}]") for i, v in enumerate(tested)),
        required_features=doc.strings(data, "required_features", "hardware"),
    )


def _runner(doc: _Doc, raw: Any, folder: Path) -> Runner:
    data = doc.table(raw, "runner", ("backend", "workdir", "timeout_sec", "env", "solution_file"),
                     ("backend", "solution_file"))
    backend = doc.string(data, "backend", "runner")
    if backend not in SUPPORTED_BACKENDS:
        raise doc.fail("runner.backend", f"{backend!r} is not supported: supported backends are "
                       f"{', '.join(SUPPORTED_BACKENDS)} (a Makefile-built harness)")
    timeout = doc.number(data, "timeout_sec", "runner", DEFAULT_TIMEOUT_S)
    if timeout <= 0:
        raise doc.fail("runner.timeout_sec", f"must be a positive number of seconds, got {timeout:g}")
    solution = doc.string(data, "solution_file", "runner")
    if "/" in solution or "\\" in solution or solution in (".", "..") or solution.startswith("."):
        raise doc.fail("runner.solution_file", f"{solution!r} must be a plain file name in the task folder "
                       "(no '/', no '..', not hidden)")
    if solution.lower() in _RECIPE_FILES:
        raise doc.fail("runner.solution_file", f"{solution!r} is the task's recipe, not a solution file")
    if not (folder / solution).is_file():
        raise doc.fail("runner.solution_file", f"{solution!r} does not exist in {folder}")
    env_raw = data.get("env") or {}
    if not isinstance(env_raw, dict):
        raise doc.fail("runner.env", f"must be a mapping of NAME: \"value\", got {_shown(env_raw)}")
    env: dict[str, str] = {}
    for key, value in env_raw.items():
        where = f"runner.env.{key}"
        if not isinstance(key, str) or not _IDENT.match(key):
            raise doc.fail(where, "the variable name must be an identifier (letters, digits, _)")
        if key in _RESERVED_ENV or key.startswith(_RESERVED_ENV_PREFIXES):
            raise doc.fail(where, f"{key} may not be set by a task: PATH, HOME, TMPDIR, SHELL, LD_*, PYTHON*, "
                           "CUDA_VISIBLE_DEVICES, NVIDIA_*, make's own variables and KW_* belong to the runner")
        if not isinstance(value, str):
            raise doc.fail(where, f"must be a string (quote it: \"{value}\"), got {_shown(value)}")
        env[key] = value
    workdir = doc.string(data, "workdir", "runner", "", empty=True)
    return Runner(backend, solution, timeout, env, workdir)


def _build_section(doc: _Doc, raw: Any) -> Build:
    data = doc.table(raw, "build", ("cmd", "clean_cmd"), ("cmd",))
    argv = _make_command(doc, data["cmd"], "build.cmd")
    clean = data.get("clean_cmd")
    clean_argv = _make_command(doc, clean, "build.clean_cmd") if clean is not None else ()
    return Build(data["cmd"], argv, clean or "", clean_argv)


def _execute_section(doc: _Doc, raw: Any) -> Execute:
    data = doc.table(raw, "execute", ("cmd", "success"), ("cmd",))
    argv = _execute_command(doc, data["cmd"], "execute.cmd")
    success = Success()
    if data.get("success") is not None:
        s = doc.table(data["success"], "execute.success", ("exit_code", "stdout_regex"))
        exit_code = doc.integer(s, "exit_code", "execute.success", 0) if s.get("exit_code", 0) is not None else None
        if exit_code is not None and not 0 <= exit_code <= 255:
            raise doc.fail("execute.success.exit_code", f"must be an exit status 0-255, got {exit_code}")
        regex = s.get("stdout_regex")
        if regex is not None:
            doc.regex(regex, "execute.success.stdout_regex")
        success = Success(exit_code, regex)
    return Execute(data["cmd"], argv, success)


def _correctness(doc: _Doc, raw: Any) -> Correctness:
    data = doc.table(raw, "correctness", ("mode", "tolerances"), ("mode",))
    mode = data["mode"]
    if mode not in CORRECTNESS_MODES:
        raise doc.fail("correctness.mode", f"{mode!r} must be one of {', '.join(CORRECTNESS_MODES)}")
    tol = Tolerance(*DEFAULT_TOLERANCE, "default")
    if data.get("tolerances") is not None:
        t = doc.table(data["tolerances"], "correctness.tolerances", ("atol", "rtol"))
        values = []
        for key, default in zip(("atol", "rtol"), DEFAULT_TOLERANCE, strict=True):
            value = doc.number(t, key, "correctness.tolerances", default)
            if value < 0:
                raise doc.fail(f"correctness.tolerances.{key}", f"must be a number >= 0, got {value:g}")
            values.append(value)
        tol = Tolerance(values[0], values[1], "task.yaml")
    return Correctness(mode, tol)


def _performance(doc: _Doc, raw: Any) -> Performance:
    if raw is None:
        return Performance()
    data = doc.table(raw, "performance", ("enabled", "parser", "metric"), ("enabled",))
    enabled = data["enabled"]
    if not isinstance(enabled, bool):
        raise doc.fail("performance.enabled", f"must be true or false, got {_shown(enabled)}")
    metric = data.get("metric", METRICS[0])
    if metric not in METRICS:
        raise doc.fail("performance.metric", f"{metric!r} is not supported: use {', '.join(METRICS)}")
    parser = TimeParser()
    if data.get("parser") is not None:
        p = doc.table(data["parser"], "performance.parser", ("kernel_time_ms_regex", "ref_time_ms_regex"))
        kernel, ref = p.get("kernel_time_ms_regex"), p.get("ref_time_ms_regex")
        if kernel is not None:
            doc.regex(kernel, "performance.parser.kernel_time_ms_regex", groups=1)
        if ref is not None:
            doc.regex(ref, "performance.parser.ref_time_ms_regex", groups=1)
        parser = TimeParser(kernel, ref)
    if enabled and not parser.kernel_time_ms_regex:
        raise doc.fail("performance.parser.kernel_time_ms_regex", "is required when performance.enabled is true")
    return Performance(enabled, parser, metric)


def _source(doc: _Doc, raw: Any) -> Source:
    if raw is None:
        return Source()
    data = doc.table(raw, "source", ("repo", "files", "commit", "license"))
    return Source(
        repo=doc.string(data, "repo", "source", "", empty=True),
        files=doc.strings(data, "files", "source"),
        commit=doc.string(data, "commit", "source", "", empty=True),
        license=doc.string(data, "license", "source", "", empty=True),
    )


def _anti_cheat(doc: _Doc, raw: Any) -> AntiCheat:
    if raw is None:
        return AntiCheat()
    data = doc.table(raw, "anti_cheat", ("blocked_patterns", "required_patterns"))
    out = {}
    for key in ("blocked_patterns", "required_patterns"):
        patterns = doc.strings(data, key, "anti_cheat")
        for i, pattern in enumerate(patterns):
            doc.regex(pattern, f"anti_cheat.{key}[{i}]")
        out[key] = patterns
    return AntiCheat(**out)


# ---------------------------------------------------------------- anti-cheat


_LITERALS = re.compile(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*')
_PRINTF_SPEC = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|L|z|j|t)?[diouxXeEfFgGaA]")
_INCLUDE = re.compile(r"(?m)^[ \t]*#[ \t]*(include|include_next|import|embed)\b[ \t]*(.*)$")


def check_solution(source: str, spec: MakeTaskSpec) -> StaticReport:
    """The task's anti_cheat patterns plus our own rules, on the source without its comments.

    - blocked-pattern: no `anti_cheat.blocked_patterns` regex may match (each hit with its line);
    - required-pattern: every `anti_cheat.required_patterns` regex must match (a comment does not count);
    - reference-include: the solution may #include (or #embed, .incbin) a file of the task folder only if
      the shipped solution includes it too: the harness, the expert reference and the scorer's data stay
      out; paths with '..' or absolute paths and computed includes are refused outright;
    - harness-output: no string literal may read like the harness's verdict or timing lines (the success
      regex, "Kernel time", "Ref time"): only the harness prints those;
    - system-call: no files, processes, environment or network (SOLUTION_SYSTEM_CALLS).
    The audit after scoring (speedup>10x flags) remains the answer to what static rules cannot see.
    """
    code = strip_comments(source, blank_strings=False)  # string literals intact, for includes and literals
    blanked = strip_comments(source, blank_strings=True)  # for calls: a name inside a string is prose
    out: list[Violation] = []

    def line_of(pos: int) -> int:
        return code.count("\n", 0, pos) + 1

    def text_of(line: int) -> str:
        return code.splitlines()[line - 1].strip()[:120] if code else ""

    for pattern in spec.anti_cheat.blocked_patterns:
        hits = list(re.finditer(pattern, code, re.MULTILINE))
        for m in hits[:5]:
            line = line_of(m.start())
            out.append(Violation("blocked-pattern", line,
                                 f"matches the blocked pattern /{pattern}/: {text_of(line)!r}"))
    for pattern in spec.anti_cheat.required_patterns:
        if not re.search(pattern, code, re.MULTILINE):
            out.append(Violation("required-pattern", 0, f"the required pattern /{pattern}/ is missing "
                                 "(outside comments)"))

    allowed = _included_targets(spec.baseline_source(spec.precision))
    task_files = {p.relative_to(spec.directory).as_posix() for p in spec.source_files(spec.precision)}
    task_names = task_files | {PurePosixPath(f).name for f in task_files}
    for m in _INCLUDE.finditer(code):
        directive, target = m.group(1), m.group(2).strip()
        reason = _include_problem(directive, target, allowed, task_names, spec.runner.solution_file)
        if reason:
            out.append(Violation("reference-include", line_of(m.start()), reason))
    for m in re.finditer(r"\.incbin\b", code):
        out.append(Violation("reference-include", line_of(m.start()),
                             ".incbin pulls a file into the binary; the solution may not embed files"))

    heads = _output_patterns(spec)
    for m in _LITERALS.finditer(code):
        text = "".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(0)))
        filled = _PRINTF_SPEC.sub("1.0", text)
        for what, regex, head in heads:
            if re.search(regex, filled) or (head and head in text):
                out.append(Violation("harness-output", line_of(m.start()),
                                     f"the string {text[:60]!r} looks like the harness's {what} line (/{regex}/): "
                                     "only the harness prints it"))
                break

    for name in SOLUTION_SYSTEM_CALLS:
        for m in re.finditer(rf"(?<![\w.>]){re.escape(name)}\s*\(", blanked):
            out.append(Violation("system-call", line_of(m.start()),
                                 f"calls {name}(); a solution may not touch files, processes, the environment "
                                 "or the network"))
    for name in SYSTEM_TYPES:
        for m in re.finditer(rf"\bstd\s*::\s*{re.escape(name)}\b", blanked):
            out.append(Violation("system-call", line_of(m.start()), f"uses std::{name}"))
    out.sort(key=lambda v: (v.line, v.rule))
    return StaticReport(tuple(out))


def _included_targets(path: Path) -> set[str]:
    """What the shipped solution includes, as written and by file name: the sanctioned interface."""
    try:
        code = strip_comments(path.read_text(encoding="utf-8", errors="replace"), blank_strings=False)
    except OSError:
        return set()
    out: set[str] = set()
    for m in _INCLUDE.finditer(code):
        target = m.group(2).strip()
        if target[:1] in "\"<":
            inner = target[1:].split('"' if target[0] == '"' else ">")[0].strip()
            out |= {inner, PurePosixPath(inner).name}
    return out


def _include_problem(directive: str, target: str, allowed: set[str], task_names: set[str], solution: str) -> str:
    shown = f"#{directive} {target}"
    if target[:1] not in "\"<":
        return f"{shown}: computed includes are not allowed; name the header in quotes or <>"
    inner = target[1:].split('"' if target[0] == '"' else ">")[0].strip()
    parts = PurePosixPath(inner).parts
    if inner.startswith("/") or ".." in parts:
        return f"{shown}: absolute paths and '..' are not allowed; the solution stays inside its folder"
    if directive == "embed":
        return f"{shown}: the solution may not embed files"
    name = PurePosixPath(inner).name
    ours = inner in task_names or name in task_names
    if ours and name != solution and inner not in allowed and name not in allowed:
        return (f"{shown}: {inner} is a file of the task folder that the shipped solution does not include; "
                "the harness and the expert reference stay out of the solution")
    return ""


def _literal_head(regex: str) -> str:
    """The plain text a regex starts with ('Kernel time:' of 'Kernel time:\\s*([0-9.]+)'), '' if short."""
    text = re.sub(r"^(\^|\\A)", "", regex)
    head = re.match(r"[^\\.^$*+?{}\[\]|()]*", text)
    value = head.group(0) if head else ""
    if len(text) > len(value) and text[len(value)] in "*?{" and value:
        value = value[:-1]  # the last character is optional or repeated
    return value.strip() if len(value.strip()) >= 4 else ""


def _output_patterns(spec: MakeTaskSpec) -> list[tuple[str, str, str]]:
    out = []
    if spec.execute.success.stdout_regex:
        out.append(("success", spec.execute.success.stdout_regex, _literal_head(spec.execute.success.stdout_regex)))
    for what, regex in (("kernel time", spec.performance.parser.kernel_time_ms_regex),
                        ("reference time", spec.performance.parser.ref_time_ms_regex)):
        if regex:
            out.append((what, regex, _literal_head(regex)))
    return out


# ---------------------------------------------------------------- pure helpers: validation and times


def matches_success(result: sandbox.SandboxResult, spec: MakeTaskSpec) -> tuple[bool, str]:
    """(whether a finished run passes the task's validator, why not). Reads `returncode` and `stdout`."""
    success, mode = spec.execute.success, spec.correctness.mode
    problems = []
    if mode in ("stdout_or_exit", "exit_code"):
        want = success.exit_code if success.exit_code is not None else 0
        if result.returncode != want:
            problems.append(f"exit status {result.returncode} (expected {want})")
    if mode in ("stdout_or_exit", "stdout_regex") and success.stdout_regex:
        if not re.search(success.stdout_regex, result.stdout, re.MULTILINE):
            problems.append(f"no output line matches /{success.stdout_regex}/")
    return not problems, "; ".join(problems)


def _time(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def parse_times(stdout: str, spec: MakeTaskSpec) -> list[tuple[float | None, float | None]]:
    """(kernel ms, reference ms) per case: the i-th match of each regex, in output order. A missing or
    non-numeric value is None (so a list shorter on one side shows as Nones at its end)."""
    parser = spec.performance.parser

    def values(regex: str | None) -> list[float | None]:
        if not regex:
            return []
        return [_time(m.group(1)) for m in re.finditer(regex, stdout, re.MULTILINE)]

    return list(zip_longest(values(parser.kernel_time_ms_regex), values(parser.ref_time_ms_regex)))


def times_problem(times: list[tuple[float | None, float | None]], spec: MakeTaskSpec) -> str:
    """'' when every case has a kernel time (and a reference time, where the task parses one)."""
    parser = spec.performance.parser
    kernel = [k for k, _ in times]
    if all(k is None for k in kernel):  # also when there is no case at all
        return f"no line matches the kernel time regex /{parser.kernel_time_ms_regex}/ with a number of ms"
    bad = [i + 1 for i, k in enumerate(kernel) if k is None]
    if bad:
        return (f"case {bad[0]} has no readable kernel time (/{parser.kernel_time_ms_regex}/ must capture a "
                "number of ms; the reference times outnumber the kernel times, or a value is not a number)")
    if parser.ref_time_ms_regex:
        missing = [i + 1 for i, (_, r) in enumerate(times) if r is None]
        if missing:
            return (f"case {missing[0]} has no readable reference time (/{parser.ref_time_ms_regex}/): "
                    f"{sum(r is not None for _, r in times)} reference times for {len(times)} kernel times")
    return ""


def _stats(ms: float) -> TimingStats:
    return TimingStats(samples=1, mean_ms=ms, median_ms=ms, min_ms=ms, max_ms=ms, std_ms=0.0, cv=0.0)


_TELLING = re.compile(r"fail|error|mismatch|wrong|incorrect|differ|expected|nan\b|abort|exception", re.IGNORECASE)


def quote_output(text: str, limit: int = 5) -> str:
    """The lines of an output that say what went wrong (else its last lines), quoted for a reason."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("sandbox:")]
    telling = [ln for ln in lines if _TELLING.search(ln)] or lines[-limit:]
    return " | ".join(ln[:200] for ln in telling[:limit]) or "(no output)"


# ---------------------------------------------------------------- the runner


@dataclass(frozen=True)
class _Run:
    """One build + run of a solution file in its own workspace."""

    compile: CompileResult
    result: sandbox.SandboxResult | None = None  # None: the build failed (or compile_only)


@dataclass(frozen=True)
class _Timed:
    """The shipped solution's cases (kernel ms, reference ms), and how they were obtained."""

    cases: tuple[tuple[float, float | None], ...]
    cached: bool
    compile: CompileResult | None = None


class _Context(EvalContext):
    """A task.yaml evaluation: the harness owns its repetitions, so one seed and one iteration are reported."""

    scratch_prefix = "kw-make"

    def evaluation_fields(self) -> dict[str, Any]:
        return {"seeds": 1, "iters": 1, "toolchain": self.chain.describe()}

    def gpu_problem(self) -> str:
        gpu, need = self.chain.gpu, self.spec.hardware.min_sm
        if gpu is None:
            return f"this task needs a GPU and none is present ({self.chain.gpu_reason})"
        have = _sm_of(gpu.compute_capability)
        if have is not None and have < need:
            return f"needs sm_{need} or newer; this worker's {gpu.name} is sm_{have}"
        return ""

    def build_env(self) -> dict[str, str]:
        env = dict(self.spec.runner.env, KW_ARCH=self.chain.arch)
        if self.chain.nvcc:
            # Makefiles call plain `nvcc`; the worker may have found it outside PATH.
            path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
            env["PATH"] = f"{Path(self.chain.nvcc).parent}{os.pathsep}{path}"
        return env

    def run_env(self) -> dict[str, str]:
        tol = self.spec.tolerance(self.precision)
        return dict(self.spec.runner.env, KW_ATOL=repr(tol.atol), KW_RTOL=repr(tol.rtol),
                    KW_SEED=str(self.options.seed_base), KW_ARCH=self.chain.arch)


def _sm_of(capability: str) -> int | None:
    m = re.fullmatch(r"(\d+)\.(\d+)", capability.strip())
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None


def evaluate_make(
    spec: MakeTaskSpec,
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
    """Check, build, run and score a candidate solution file. `flags` are not used: the Makefile owns them."""
    ctx = _Context(spec, precision, options or EvalOptions(), chain, work_dir, progress)
    return guarded(ctx, "candidate", lambda: _evaluate(ctx, candidate_source, flags, compile_only))


def evaluate_make_baseline(
    spec: MakeTaskSpec,
    precision: str,
    options: EvalOptions | None = None,
    *,
    chain: tc.Toolchain | None = None,
    work_dir: Path | str | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """Round 0: the shipped solution file, built, validated and timed (cached) alone (kind='baseline').
    Its expert_speedup is the reference's time over the shipped solution's: how far the start is."""
    ctx = _Context(spec, precision, options or EvalOptions(), chain, work_dir, progress)
    return guarded(ctx, "baseline", lambda: _evaluate_baseline(ctx, fresh=False))


def validate_make(
    spec: MakeTaskSpec,
    precision: str,
    options: EvalOptions | None = None,
    *,
    chain: tc.Toolchain | None = None,
    work_dir: Path | str | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """The task itself is sound on this GPU (kind='validate'): the shipped solution keeps the anti-cheat
    rules, builds, passes its own validator, and its times parse. Refreshes the baseline timing cache."""
    ctx = _Context(spec, precision, options or EvalOptions(), chain, work_dir, progress)

    def steps() -> Evaluation:
        report = check_solution(spec.baseline_source(precision).read_text(encoding="utf-8", errors="replace"), spec)
        if not report.ok:
            msgs = report.messages()
            return ctx.base(verdict=Verdict.REJECTED, kind="validate", static_violations=msgs,
                            reason=f"the shipped {spec.runner.solution_file} breaks the task's own rules (a task "
                                   f"problem): {msgs[0]}")
        return replace(_evaluate_baseline(ctx, fresh=True), kind="validate")

    return guarded(ctx, "validate", steps)


def _evaluate(ctx: _Context, source: str, flags: str | None, compile_only: bool) -> Evaluation:
    spec = ctx.spec
    notes = (f"compile flags come from the task's Makefile; the proposed {flags.strip()!r} were not used",) \
        if flags and flags.strip() else ()
    if not compile_only:
        problem = ctx.gpu_problem()
        if problem:
            return ctx.base(verdict=Verdict.NO_GPU, reason=problem, notes=notes)
    report = check_solution(source, spec)
    if not report.ok:
        msgs = report.messages()
        return ctx.base(verdict=Verdict.REJECTED, static_violations=msgs, notes=notes,
                        reason=msgs[0] + (f" (+{len(msgs) - 1} more)" if len(msgs) > 1 else ""))

    run = _build_and_run(ctx, "candidate", source, run=not compile_only)
    if isinstance(run, Evaluation):
        return replace(run, notes=notes)
    if compile_only:
        where = "" if ctx.chain.gpu else f"; no GPU is present ({ctx.chain.gpu_reason}), so nothing was run"
        return ctx.base(verdict=Verdict.OK, kind="compile_only", compile=run.compile, notes=notes,
                        reason=f"built with `{spec.build.cmd}` for {ctx.chain.arch}{where}")
    assert run.result is not None
    failed = _judge(ctx, run.result, "candidate", run.compile)
    if failed is not None:
        return replace(failed, notes=notes)
    if not spec.performance.enabled:
        return ctx.base(verdict=Verdict.OK, compile=run.compile, notes=notes,
                        reason="passed the task's validator (this task measures no performance)")

    # The shipped solution first: when its output does not parse either, the harness is at fault.
    baseline = _baseline_times(ctx, fresh=False)
    if isinstance(baseline, Evaluation):
        # The candidate passed the validator; the task is broken. Keep the candidate's compile, blame the task.
        crash = baseline.crash or CrashInfo("harness_error", baseline.reason)
        return ctx.base(verdict=Verdict.RUNTIME_ERROR, compile=run.compile, notes=notes,
                        crash=replace(crash, kind="harness_error"), reason=baseline.reason)
    times = parse_times(run.result.stdout, spec)
    problem = times_problem(times, spec)
    if problem:
        return ctx.base(verdict=Verdict.INCORRECT, compile=run.compile, notes=notes,
                        reason=f"the run passed its validator but its times do not parse: {problem}; output: "
                               f"{quote_output(run.result.stdout)}")
    if len(baseline.cases) != len(times):
        return ctx.base(verdict=Verdict.INCORRECT, compile=run.compile, notes=notes,
                        reason=f"the run printed {len(times)} kernel time(s); the shipped solution's prints "
                               f"{len(baseline.cases)}: the harness did not run every case")
    sizes = [
        SizeResult(index=i, params={"case": i + 1}, complexity=1.0, correct=True, baseline=_stats(b),
                   candidate=_stats(k), reference=_stats(r) if r is not None else None)
        for i, ((k, r), (b, _)) in enumerate(zip(times, baseline.cases, strict=True))
    ]
    scored = score_sizes(sizes)
    return ctx.base(
        verdict=Verdict.OK,
        reason=f"passed the task's validator; {len(sizes)} case(s) timed",
        sizes=scored.sizes, score=scored.score, geomean_speedup=scored.geomean, expert_speedup=scored.expert,
        flags=scored.flags, notes=notes, compile=run.compile, baseline_cached=baseline.cached,
    )


def _evaluate_baseline(ctx: _Context, fresh: bool) -> Evaluation:
    spec = ctx.spec
    problem = ctx.gpu_problem()
    if problem:
        return ctx.base(verdict=Verdict.NO_GPU, kind="baseline", reason=problem)
    if not spec.performance.enabled:
        run = _build_and_run(ctx, "baseline", _shipped(spec))
        if isinstance(run, Evaluation):
            return _blame_task(run, "baseline")
        assert run.result is not None
        failed = _judge(ctx, run.result, "baseline", run.compile)
        if failed is not None:
            return _blame_task(failed, "baseline")
        return ctx.base(verdict=Verdict.OK, kind="baseline", compile=run.compile,
                        reason="the shipped solution passes its validator (this task measures no performance)")
    timed = _baseline_times(ctx, fresh)
    if isinstance(timed, Evaluation):
        return replace(timed, kind="baseline")
    scored = score_sizes([  # flags only: a baseline has no candidate to compare
        SizeResult(index=i, params={"case": i + 1}, complexity=1.0, correct=True, baseline=_stats(b),
                   reference=_stats(r) if r is not None else None)
        for i, (b, r) in enumerate(timed.cases)
    ])
    sizes = [replace(s, reference_speedup=s.reference.mean_ms / s.baseline.mean_ms)
             if s.reference is not None and s.baseline is not None and s.baseline.mean_ms > 0 else s
             for s in scored.sizes]
    ratios = [s.reference_speedup for s in sizes if s.reference_speedup]
    return ctx.base(
        verdict=Verdict.OK, kind="baseline", sizes=tuple(sizes), flags=scored.flags,
        expert_speedup=geometric_mean(ratios) if ratios and len(ratios) == len(sizes) else None,
        compile=timed.compile, baseline_cached=timed.cached,
        reason=f"the shipped solution passes its validator; {len(sizes)} case(s) timed"
               + (" (from the cache)" if timed.cached else ""),
    )


def _shipped(spec: MakeTaskSpec) -> str:
    return spec.baseline_source(spec.precision).read_text(encoding="utf-8", errors="replace")


def _blame_task(ev: Evaluation, kind: str) -> Evaluation:
    return replace(ev, kind=kind, reason=f"the shipped solution failed (a task problem, not the candidate's): "
                                         f"{ev.reason}")


def _ignore_outputs(folder: str, names: list[str]) -> set[str]:
    out = set()
    for name in names:
        path = Path(folder) / name
        if path.is_dir():
            skip = name in _BUILD_DIRS
        else:
            skip = path.is_file() and _is_build_output(path)
        if skip or name.startswith("."):
            out.add(name)
    return out


def _workspace(ctx: _Context, role: str, source: str) -> Path:
    """A fresh copy of the task folder (no hidden files, no build outputs) with `source` as the solution."""
    ws = ctx.work / role
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(ctx.spec.directory, ws, ignore=_ignore_outputs, ignore_dangling_symlinks=True)
    target = ws / ctx.spec.runner.solution_file
    target.unlink(missing_ok=True)  # never write through a link
    target.write_text(source, encoding="utf-8")
    return ws


def _build_and_run(ctx: _Context, role: str, source: str, run: bool = True) -> _Run | Evaluation:
    spec, o = ctx.spec, ctx.options
    ws = _workspace(ctx, role, source)
    timeout = min(o.compile_timeout_s, spec.runner.timeout_sec)
    ctx.progress(f"{spec.name}: build the {role} ({spec.build.cmd})")
    with ctx.phase("compile"):
        res = sandbox.run(spec.build.argv, ws, timeout, env_extra=ctx.build_env(), name="kw-build")
    log = res.output + (f"\n[stopped after the {timeout:.0f} s build limit]" if res.timed_out else "")
    compiled = CompileResult(role=role, ok=res.ok, command=shlex.join(spec.build.argv), log=log,
                             seconds=round(res.wall_s, 3))
    if res.ok:
        program = ws / spec.execute.argv[0]
        if not program.is_file():
            compiled = replace(compiled, ok=False, log=log + f"\n[the build made no {spec.execute.argv[0]}]")
            return ctx.base(verdict=Verdict.COMPILE_ERROR, kind=role, compile=compiled,
                            reason=f"`{spec.build.cmd}` succeeded but made no {spec.execute.argv[0]} (a task "
                                   "problem: check the Makefile's target)")
    else:
        first = next((ln.strip() for ln in log.splitlines() if re.search(r"error|\*\*\*", ln, re.I)), "")
        what = "timed out" if res.timed_out else f"failed (exit status {res.returncode})"
        return ctx.base(verdict=Verdict.COMPILE_ERROR, kind=role, compile=compiled,
                        reason=f"{role} failed to build: `{spec.build.cmd}` {what}" + (f": {first}" if first else ""))
    if not run:
        return _Run(compiled)
    ctx.progress(f"{spec.name}: run the {role} ({spec.execute.cmd})")
    with ctx.phase("check" if role == "candidate" else "time_baseline"), ctx.gpu():
        result = sandbox.run(spec.execute.argv, ws, spec.runner.timeout_sec, env_extra=ctx.run_env(),
                                 limits=HARNESS_LIMITS, name="kw-run")
    return _Run(compiled, result)


def _judge(ctx: _Context, res: sandbox.SandboxResult, role: str, compiled: CompileResult) -> Evaluation | None:
    """None when the run passed the task's validator; else its TIMEOUT / RUNTIME_ERROR / INCORRECT verdict."""
    crash = classify_crash(res, None, False)
    passed, why = matches_success(res, ctx.spec)
    ended_badly = res.timed_out or res.returncode is None or res.signal is not None
    if not ended_badly and passed:
        return None
    if crash is not None and (ended_badly or crash.kind not in ("nonzero_exit", "missing_output")):
        # A timeout, a signal, or CUDA's error text in a run that did not pass: the program broke.
        verdict = Verdict.TIMEOUT if crash.kind == "timeout" else Verdict.RUNTIME_ERROR
        crash = replace(crash, stderr_tail=res.output[-4000:])
        return ctx.base(verdict=verdict, kind=role, compile=compiled, crash=crash,
                        reason=f"{crash.kind}: {crash.message}; output: {quote_output(res.output)}")
    return ctx.base(verdict=Verdict.INCORRECT, kind=role, compile=compiled,
                    crash=None, reason=f"the task's validator did not pass: {why}; output: {quote_output(res.output)}")


# ---------------------------------------------------------------- the shipped solution's times (cached)


def folder_hash(spec: MakeTaskSpec) -> str:
    h = hashlib.sha256()
    for path in spec.source_files(spec.precision):
        h.update(path.relative_to(spec.directory).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _cache_path(ctx: _Context) -> Path:
    o, spec = ctx.options, ctx.spec
    parts = {
        "backend": "make",
        "task": spec.task_id,
        "suite": spec.suite,
        "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "",
        "folder": folder_hash(spec),
        "seed_base": o.seed_base,
        "nvcc": ctx.chain.nvcc_version,
        "arch": ctx.chain.arch,
    }
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]
    return timing_cache_dir(o) / f"make-{spec.suite}-{spec.name}-{key}.json"


def _baseline_times(ctx: _Context, fresh: bool) -> _Timed | Evaluation:
    spec, o = ctx.spec, ctx.options
    path = _cache_path(ctx)
    if o.use_baseline_cache and not fresh and path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            cases = tuple((float(k), None if r is None else float(r)) for k, r in data["cases"])
            if cases:
                ctx.progress(f"{spec.name}: the shipped solution's times from the cache")
                return _Timed(cases, cached=True)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable entry: measure again
    run = _build_and_run(ctx, "baseline", _shipped(spec))
    if isinstance(run, Evaluation):
        return _blame_task(run, "baseline")
    assert run.result is not None
    failed = _judge(ctx, run.result, "baseline", run.compile)
    if failed is not None:
        return _blame_task(failed, "baseline")
    times = parse_times(run.result.stdout, spec)
    problem = times_problem(times, spec)
    if problem:
        crash = CrashInfo("harness_error", problem, returncode=run.result.returncode,
                          stderr_tail=run.result.output[-4000:])
        return ctx.base(verdict=Verdict.RUNTIME_ERROR, kind="baseline", compile=run.compile, crash=crash,
                        reason=f"the shipped solution's output does not parse (a task problem, not the "
                               f"candidate's): {problem}; output: {quote_output(run.result.stdout)}")
    cases = tuple((float(k), r) for k, r in times if k is not None)
    write_json_atomic(path, {"task": spec.task_id, "gpu": ctx.chain.gpu.name if ctx.chain.gpu else "",
                             "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                             "cases": [list(c) for c in cases]}, indent=None)
    return _Timed(cases, cached=False, compile=run.compile)
