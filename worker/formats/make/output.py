"""Reading a task.yaml program's output: the success criteria, "Kernel time" / "Ref time" per case."""

from __future__ import annotations

import math
import re
from itertools import zip_longest

from worker.engine import sandbox
from worker.formats.make.spec import MakeTaskSpec


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


def parse_time(text: str) -> float | None:
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
        return [parse_time(m.group(1)) for m in re.finditer(regex, stdout, re.MULTILINE)]

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


_TELLING = re.compile(r"fail|error|mismatch|wrong|incorrect|differ|expected|nan\b|abort|exception", re.IGNORECASE)


def quote_output(text: str, limit: int = 5) -> str:
    """The lines of an output that say what went wrong (else its last lines), quoted for a reason."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("sandbox:")]
    telling = [ln for ln in lines if _TELLING.search(ln)] or lines[-limit:]
    return " | ".join(ln[:200] for ln in telling[:limit]) or "(no output)"
