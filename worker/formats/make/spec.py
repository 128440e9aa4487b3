"""task.yaml tasks (the CUDAHercules format, its paper's Appendix B): the spec.

The package: spec.py (the spec's dataclasses), schema.py (load_make_spec: reading and validating task.yaml),
static_checks.py (the anti-cheat rules), output.py (validation and times from the program's output),
evaluation.py (the make runner and the entry points).

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
- Phases carry the C/CUDA format's names, so GPU-time accounting needs no special case: compile (every
  make), check (the candidate's one run: validation and timing together), time_baseline (the shipped
  solution's run), lock_wait, total. Evaluation.seeds and iters are 1: the harness owns its repetitions.
- No Nsight Compute profile (options.profile is not used): the harness's kernels are not ours to name.
- correctness.outputs (optional): the program's own validator runs in the candidate's process and can be
  forged; a task that declares outputs has them compared in the worker with the shipped solution's run
  (outputs.py, enforced in evaluation._judge_outputs).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from worker.engine.taskspec import Tolerance

DEFAULT_TOLERANCE = (1e-2, 1e-2)
DEFAULT_TIMEOUT_S = 300.0

# Files the build makes (or a stale build left): never copied, never hashed, never task sources.
_BUILD_SUFFIXES = {".o", ".obj", ".a", ".so", ".exe", ".out", ".ptx", ".cubin", ".fatbin", ".d", ".pyc",
                   ".stdout", ".stderr"}
BUILD_DIRS = {"build", "__pycache__"}

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


OUTPUT_DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8")
OUTPUTS_ENV = "KW_OUTPUTS"  # the folder a program that declares correctness.outputs writes its outputs into


@dataclass(frozen=True)
class Outputs:
    """correctness.outputs: the program writes each case's outputs as raw little-endian arrays of `dtype`,
    one file per output, into the folder named by $KW_OUTPUTS; the runner compares them with the shipped
    solution's outside both processes (evaluation.md, "task.yaml: outputs judged outside the program")."""

    dtype: str = "float32"


@dataclass(frozen=True)
class Correctness:
    mode: str = "stdout_or_exit"
    tolerances: Tolerance = field(default_factory=lambda: Tolerance(*DEFAULT_TOLERANCE, "default"))
    outputs: Outputs | None = None  # None: the program's own validator is the only check


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


def is_build_output(path: Path) -> bool:
    if path.suffix.lower() in _BUILD_SUFFIXES:
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"  # a linked program, whatever its name
    except OSError:
        return False


def _task_files(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in BUILD_DIRS)
        for name in files:
            path = Path(root) / name
            if not name.startswith(".") and path.is_file() and not is_build_output(path):
                yield path
