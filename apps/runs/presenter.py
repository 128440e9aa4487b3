"""Run events and failures in words: the one place that turns an event into a sentence.

The viewer's Events panel, the live stream (RunEvent.as_message adds `text`) and the failure reasons in
the runs list, the run header and the timeline all read from here, so a number is formatted one way
everywhere. Each event type of docs/events.md has its own sentence; an unknown type gets a readable
generic one built from its scalar fields, never a Python repr. Pure functions of (type, payload).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

SHORT_REASON = 120  # characters of a reason shown inline; the whole text is one hover or click away


# ----------------------------------------------------------------------------- numbers


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def format_ms(ms: Any) -> str:
    """A time given in milliseconds, in the unit that reads best: 0.0124 -> '12.4 µs', 3.2 -> '3.20 ms'."""
    value = _number(ms)
    if value is None:
        return "—"
    if value < 0.001:
        return f"{value * 1e6:.0f} ns"
    if value < 1:
        return f"{value * 1e3:.3g} µs"
    if value < 1000:
        return f"{value:.3g} ms" if value < 100 else f"{value:.0f} ms"
    return format_seconds(value / 1000)


def format_seconds(seconds: Any) -> str:
    """0.051 -> '51 ms', 4.23 -> '4.2 s', 192 -> '3 min 12 s'."""
    value = _number(seconds)
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes} min {rest:02d} s"


def format_speedup(value: Any) -> str:
    """1.0 -> '1.00×', 180.455 -> '180×' (three significant digits above 100)."""
    number = _number(value)
    if number is None:
        return "—"
    return f"{number:.0f}×" if number >= 100 else f"{number:.2f}×"


def format_p(value: Any) -> str:
    """The complexity-weighted speedup P as people write it: 'P 2.31×'."""
    number = _number(value)
    return "P —" if number is None else f"P {format_speedup(number)}"


def format_usd(value: Any) -> str:
    number = _number(value)
    if number is None:
        return "—"
    return f"${number:.2f}" if number >= 1 else f"${number:.4f}"


def format_count(value: Any) -> str:
    number = _number(value)
    return "—" if number is None else f"{int(number):,}"


def short_reason(text: str, limit: int = SHORT_REASON) -> str:
    """The first line of a reason, clipped at a word: what fits in a table cell or a timeline entry."""
    first = (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""
    if len(first) <= limit:
        return first
    cut = first[:limit].rsplit(" ", 1)[0] or first[:limit]
    return cut.rstrip(" ,;:") + "…"


# ----------------------------------------------------------------------------- events


def _turn(payload: Mapping[str, Any]) -> str:
    """'Turn 3' for an optimize turn, 'Turn 3.1' for its first debug round, 'The baseline' for round 0."""
    round_index, debug = payload.get("round"), payload.get("debug") or 0
    if payload.get("kind") == "baseline" or (round_index == 0 and not debug):
        return "The baseline"
    if round_index is None:
        return "A turn"
    return f"Turn {round_index}.{debug}" if debug else f"Turn {round_index}"


def _role(payload: Mapping[str, Any]) -> str:
    role = str(payload.get("role") or "agent")
    return role[:1].upper() + role[1:]


def _reason(payload: Mapping[str, Any], key: str = "error") -> str:
    return short_reason(str(payload.get(key) or ""))


def _run_queued(p):
    what = f" for {p['task']}" if p.get("task") else ""
    if p.get("manual"):
        return f"Run queued{what}: a manual kernel waits for a GPU worker."
    model = f" with model {p['model']}" if p.get("model") else ""
    return f"Run queued{what}{model}; it starts when a GPU worker takes it."


def _run_status(p):
    status = str(p.get("status") or "")
    reason = _reason(p)
    sentences = {
        "running": "A GPU worker took the run; it is running.",
        "succeeded": "The run finished successfully.",
        "failed": "The run failed" + (f": {reason}" if reason else ", without a stated reason") + ".",
        "cancelled": "The run was cancelled" + (f": {reason}" if reason else "") + ".",
    }
    return sentences.get(status, f"The run is now {status or 'in an unknown state'}.")


def _run_requeued(p):
    lost = p.get("lost_worker") or "its previous worker"
    worker = p.get("worker") or "another worker"
    return f"Worker {lost} was lost; {worker} restarted the run."


def _run_note(p):
    note = short_reason(str(p.get("note") or ""))
    return f"Note: {note[:1].upper() + note[1:]}." if note else "A note without text."


def _worker_info(p):
    host = p.get("host") or "a worker"
    gpu = p.get("gpu") or "no GPU"
    nvcc = p.get("nvcc_version")
    tail = f", nvcc {nvcc}" if nvcc else ""
    return f"Running on {host} ({gpu}{tail})."


def _turn_started(p):
    kind = p.get("kind")
    if kind == "baseline":
        return "Timing the baseline."
    if kind == "debug":
        return f"{_turn(p)} started: a debug round to fix the previous candidate."
    if kind == "manual":
        return f"{_turn(p)} started: a manual kernel."
    return f"{_turn(p)} started."


def _agent_started(p):
    model = f" ({p['model']})" if p.get("model") else ""
    return f"{_turn(p)}: the {_role(p)} agent{model} is thinking."


def _agent_finished(p):
    parts = [f"{format_count(p.get('tokens_in'))} tokens in, {format_count(p.get('tokens_out'))} out"]
    if _number(p.get("latency_s")) is not None:
        parts.append(format_seconds(p["latency_s"]))
    cost = _number(p.get("cost_usd"))
    if cost:
        parts.append(format_usd(cost))
    return f"{_turn(p)}: the {_role(p)} agent answered ({', '.join(parts)})."


def _agent_failed(p):
    return f"{_turn(p)}: the {_role(p)} agent's call failed: {_reason(p) or 'no reason given'}."


def _diff_counts(diff: str) -> tuple[int, int]:
    lines = (diff or "").splitlines()
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return added, removed


def _turn_code(p):
    added, removed = _diff_counts(str(p.get("diff") or ""))
    if not added and not removed:
        return f"{_turn(p)}: the Coder wrote new code."
    return f"{_turn(p)}: the Coder wrote new code (+{added} −{removed} lines against its parent)."


def _compile_started(p):
    return f"{_turn(p)}: compiling."


def _compile_finished(p):
    took = f" in {format_seconds(p['seconds'])}" if _number(p.get("seconds")) is not None else ""
    notes = [short_reason(str(n)) for n in p.get("notes") or [] if n]
    tail = f" Note: {'; '.join(notes)}." if notes else ""
    if p.get("ok"):
        return f"{_turn(p)} compiled{took}.{tail}"
    first_error = next((line.strip() for line in str(p.get("log") or "").splitlines() if "error" in line), "")
    detail = f": {short_reason(first_error)}" if first_error else ""
    return f"{_turn(p)} failed to compile{took}{detail}.{tail}"


def _sizes_sentence(sizes: list) -> str:
    rows = [s for s in sizes if isinstance(s, Mapping)]
    if not rows:
        return ""
    checked = [s for s in rows if s.get("correct") is not None]
    parts = []
    if checked:
        parts.append(f"{sum(1 for s in checked if s.get('correct'))} of {len(checked)} sizes correct")
    speedups = [v for v in (_number(s.get("speedup")) for s in rows) if v is not None]
    if speedups:
        low, high = min(speedups), max(speedups)
        parts.append(f"speedup {format_speedup(low)}" if low == high
                     else f"speedups {format_speedup(low)}–{format_speedup(high)}")
    return "; ".join(parts)


def _turn_finished(p):
    sizes = p.get("sizes") or []
    if p.get("kind") == "baseline":
        times = [t for t in (_number(s.get("baseline_ms")) for s in sizes if isinstance(s, Mapping)) if t is not None]
        span = (f" ({format_ms(min(times))}–{format_ms(max(times))} over {len(times)} sizes)" if len(times) > 1
                else f" ({format_ms(times[0])})" if times else "")
        if p.get("verdict") in ("ok", None, ""):
            return f"The baseline is timed{span}."
        return f"The baseline could not be timed ({p.get('verdict')}): {_reason(p, 'reason') or 'no reason given'}."
    label = _turn(p)
    detail = _sizes_sentence(sizes)
    bottlenecks = [str(b).replace("_", " ") for b in p.get("bottlenecks") or [] if b]
    if p.get("valid"):
        sentence = f"{label} is correct: {format_p(p.get('score'))}"
        if detail:
            sentence += f"; {detail}"
        if bottlenecks:
            sentence += f"; bottleneck {', '.join(bottlenecks)}"
        return sentence + "."
    verdict = str(p.get("verdict") or "invalid").replace("_", " ")
    reason = _reason(p, "reason")
    sentence = f"{label} is not valid ({verdict})"
    if reason:
        sentence += f": {reason}"
    if detail:
        sentence += f" ({detail})"
    return sentence + "."


def _best_updated(p):
    return f"New best: {_turn(p)} with {format_p(p.get('score'))}."


def _turn_submitted(p):
    return f"{_turn(p)}: a manual kernel was submitted for evaluation."


def _turn_verified(p):
    status = p.get("status")
    gpu = f" on {p['gpu']}" if p.get("gpu") else ""
    head = {"verified": f"{_turn(p)} verified{gpu}", "disagrees": f"{_turn(p)}: the verification{gpu} disagrees",
            "failed": f"{_turn(p)} could not be verified"}.get(status, f"{_turn(p)}: verification {status}")
    return _one_stop((f"{head}: {p['summary']}" if p.get("summary") else head) + ".")


SENTENCES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "run.queued": _run_queued,
    "run.running": _run_status,
    "run.succeeded": _run_status,
    "run.failed": _run_status,
    "run.cancelled": _run_status,
    "run.requeued": _run_requeued,
    "run.note": _run_note,
    "worker.info": _worker_info,
    "turn.started": _turn_started,
    "agent.started": _agent_started,
    "agent.finished": _agent_finished,
    "agent.failed": _agent_failed,
    "turn.code": _turn_code,
    "compile.started": _compile_started,
    "compile.finished": _compile_finished,
    "turn.finished": _turn_finished,
    "best.updated": _best_updated,
    "turn.submitted": _turn_submitted,
    "turn.verified": _turn_verified,
}


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        number = _number(value)
        return None if number is None else (str(value) if isinstance(value, int) else f"{number:.4g}")
    if isinstance(value, str) and value.strip():
        return short_reason(value, 60)
    return None  # lists and dicts stay behind the raw JSON toggle


def _generic(type_: str, payload: Mapping[str, Any]) -> str:
    words = type_.replace(".", " ").replace("_", " ").strip() or "event"
    fields = [(str(k).replace("_", " "), _scalar(v)) for k, v in payload.items()]
    shown = [f"{k} {v}" for k, v in fields if v is not None][:4]
    sentence = f"{words[:1].upper()}{words[1:]}"
    return f"{sentence}: {', '.join(shown)}." if shown else f"{sentence}."


def describe_event(type_: str, payload: Any) -> str:
    """One sentence for an event; a payload that is not what the type promises still gets a sentence."""
    payload = payload if isinstance(payload, Mapping) else {}
    render = SENTENCES.get(type_)
    text = ""
    if render is not None:
        try:
            text = render(payload)
        except (TypeError, ValueError, AttributeError, KeyError):
            pass  # a malformed payload of a known type: fall back rather than break the page
    return _one_stop(text or _generic(type_, payload))


def _one_stop(text: str) -> str:
    """A clipped reason ('…') or one with its own full stop gets no second one."""
    return re.sub(r"([.…!?])\.$", r"\1", text)


# ----------------------------------------------------------------------------- failures


def run_failure(status: str, error: str) -> str:
    """Why a failed or cancelled run ended, in full ('' for the others)."""
    if status == "failed":
        return (error or "").strip() or "The run failed without a stated reason (see its events)."
    if status == "cancelled":
        return (error or "").strip() or "Cancelled by its owner or an administrator."
    return ""


def turn_failure(verdict: str, reason: str) -> str:
    """Why a turn is not valid, in full ('' for a valid or pending one)."""
    if verdict in ("", "queued", "ok"):
        return ""
    words = verdict.replace("_", " ")
    return f"{words}: {reason.strip()}" if (reason or "").strip() else words


def run_outcome(status: str, best_score: Any, best_label: str, turns: int, wall_s: Any, gpu: str) -> str:
    """One line for a command's report: 'succeeded, best P 2.31× (turn 2.1), 9 turns, 3 min 12 s on NVIDIA H100'."""
    parts = [status]
    if _number(best_score) is not None:
        parts.append(f"best {format_p(best_score)}" + (f" (turn {best_label})" if best_label else ""))
    parts.append(f"{turns} turn{'s' if turns != 1 else ''}")
    if _number(wall_s):
        parts.append(format_seconds(wall_s) + (f" on {gpu}" if gpu else ""))
    return ", ".join(parts)
