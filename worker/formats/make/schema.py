"""Reading and validating a task.yaml (load_make_spec): every problem is a SpecError naming its key."""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from worker.engine.taskspec import CATEGORIES, PRECISIONS, SpecError, Tolerance
from worker.formats.make.output import parse_time
from worker.formats.make.spec import (
    DEFAULT_TIMEOUT_S,
    DEFAULT_TOLERANCE,
    OUTPUT_DTYPES,
    AntiCheat,
    Build,
    Correctness,
    Execute,
    Hardware,
    MakeTaskSpec,
    Outputs,
    Performance,
    Runner,
    Source,
    Success,
    TimeParser,
)

SUPPORTED_BACKENDS = ("class1_make", "make")
CORRECTNESS_MODES = ("stdout_or_exit", "exit_code", "stdout_regex")
METRICS = ("speedup_ref_over_sol",)
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
_RECIPE_FILES = {"task.yaml", "makefile", "gnumakefile"}


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
            if isinstance(value, str) and parse_time(value) is not None:
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
    data = doc.table(raw, "correctness", ("mode", "tolerances", "outputs"), ("mode",))
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
    outputs = None
    if data.get("outputs") is not None:
        o = doc.table(data["outputs"], "correctness.outputs", ("dtype",))
        dtype = doc.string(o, "dtype", "correctness.outputs", default="float32")
        if dtype not in OUTPUT_DTYPES:
            raise doc.fail("correctness.outputs.dtype", f"{dtype!r} must be one of {', '.join(OUTPUT_DTYPES)}")
        outputs = Outputs(dtype)
    return Correctness(mode, tol, outputs)


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
