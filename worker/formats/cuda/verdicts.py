"""What the C/CUDA harness's results mean for the verdict: the check's sizes, the reasons a candidate fails, and
the timing cross-checks (docs/evaluation.md, "Who decides the verdict", "Every timed call is checked")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from worker.engine.results import Profile, SizeResult


def merge_check(sizes: list[SizeResult], data: dict[str, Any] | None) -> list[SizeResult]:
    """The sizes with what the check's JSON (kwref's, mode compare or validate) says of each."""
    by_index = {int(e.get("index", i)): e for i, e in enumerate((data or {}).get("sizes", []))}
    out = []
    for s in sizes:
        entry = by_index.get(s.index)
        if entry is None:
            out.append(replace(s, correct=False, first_mismatch={"error": "the harness reported no result"}))
            continue
        out.append(
            replace(
                s,
                correct=bool(entry.get("correct")),
                inputs_unchanged=entry.get("inputs_unchanged"),
                first_mismatch=entry.get("first_mismatch"),
                changed_input=entry.get("changed_input"),
                out_of_bounds=entry.get("out_of_bounds"),
            )
        )
    return out


# The reported time of a call may not be shorter than PROFILER_MARGIN x the summed durations of its kernels as
# Nsight Compute measured them in a separate process: ncu runs kernels at base clocks (so its durations are
# up to ~25 % longer than at boost), and a sample spans at least the kernels and the gaps between them, so an
# honest time is never below half of it. A time that is shows the timing was forged or manipulated
# (docs/threat-model.md).
PROFILER_MARGIN = 0.5


def timing_below_profiler(sizes: tuple[SizeResult, ...] | list[SizeResult], profiles: tuple[Profile, ...]) -> str:
    """Why the candidate's reported times cannot be true, or "" when they agree with the profiler."""
    kernels: dict[int, float] = {}
    for p in profiles:
        if p.duration_ns:
            kernels[p.size_index] = kernels.get(p.size_index, 0.0) + p.duration_ns / 1e6
    for s in sizes:
        ms = kernels.get(s.index)
        if ms and s.candidate and s.candidate.median_ms < PROFILER_MARGIN * ms:
            return (f"at {s.label} the reported time per call ({s.candidate.median_ms:.4g} ms, median) is below half "
                    f"of what its kernels took under Nsight Compute in a separate process ({ms:.4g} ms): the "
                    "timing was forged or manipulated, so the result is refused")
    return ""


def timed_call_failure(sizes: list[SizeResult], data: dict[str, Any] | None) -> str | None:
    """The reason a candidate fails when a timed call's output was wrong (the harness compares every timed
    call with the baseline on the same fresh inputs, kw_timed.cuh), or None when every timed call was right.
    A timing without its check (a harness older than the check) is also refused: its time is unverified."""
    labels = {s.index: s.label for s in sizes}
    for i, entry in enumerate((data or {}).get("sizes", [])):
        label = labels.get(int(entry.get("index", i)), f"size {i}")
        timing = entry.get("timing") or {}
        if entry.get("correct") is not False and timing.get("checked_calls"):
            continue
        if entry.get("correct") is not False:
            return f"at {label} the timed calls were not checked (the harness reported no timed-call check)"
        m = entry.get("first_mismatch") or {}
        call = m.get("timed_call", timing.get("failed_call"))
        batch = timing.get("batch") or 1
        shape = f", {batch} {'calls per sample, each timed alone' if timing.get('spaced') else 'launches per sample'}"
        return (
            f"at {label} timed call {call} (of {timing.get('checked_calls', '?')} checked"
            f"{shape if batch > 1 else ''}) gave a wrong result although the checks "
            f"before timing passed: {elements(m)} (each timed call gets fresh inputs and is compared with the "
            "baseline on them; doing less work, or remembering earlier results, while timed is caught here)"
        )
    return None


def elements(m: dict[str, Any]) -> str:
    """'C[7] expected 2 got nan; 3 of 1000 elements out of tolerance[, N of them never written ...]': the
    harness poisons every output it does not zero before a call (all bytes 0xFF: NaN for float and bf16, -1 for
    int), so an element still holding that was never written, and the message says so."""
    out, n = m.get("output"), m.get("unwritten") or 0
    unwritten = (
        f", {n} of them never written by the call (still the poison, all bytes 0xFF, the harness fills {out} with "
        f"before every call; the kernel must write every element of {out})" if n else ""
    )
    return (f"{out}[{m.get('index')}] expected {m.get('expected')} got {m.get('got')}; {m.get('mismatches')} of "
            f"{m.get('total')} elements out of tolerance{unwritten}")


def mismatch_reason(size: SizeResult) -> str:
    if size.out_of_bounds:
        return f"at {size.label} the call wrote out of bounds: {size.out_of_bounds}"
    if size.inputs_unchanged is False:
        which = f" ({size.changed_input})" if size.changed_input else ""
        return f"at {size.label} the candidate modified its inputs{which}"
    m = size.first_mismatch or {}
    if "index" in m:
        return f"at {size.label} (seed {m.get('seed')}): {elements(m)}"
    return f"at {size.label}: {m.get('error') or 'output out of tolerance'}"
