"""Events and failures in words: apps/runs/presenter.py words every event type of docs/events.md."""

import json
import re
from pathlib import Path

import pytest

from apps.runs.presenter import (
    SENTENCES,
    describe_event,
    format_ms,
    format_p,
    format_seconds,
    run_failure,
    short_reason,
    turn_failure,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "events.md"
SIZES = [
    {"params": {"N": 1024}, "correct": True, "speedup": 2.0, "baseline_ms": 0.02, "candidate_ms": 0.01, "cv": 0.01},
    {"params": {"N": 4096}, "correct": True, "speedup": 3.5, "baseline_ms": 0.07, "candidate_ms": 0.02, "cv": 0.01},
    {"params": {"N": 16384}, "correct": False, "speedup": None, "baseline_ms": 0.3, "candidate_ms": None, "cv": None},
]

# One realistic payload per documented type, and the words its sentence must contain.
CASES = {
    "run.queued": ({"task": "mskernelbench/softmax/fp32", "model": "gpt-x"},
                   ["Run queued for mskernelbench/softmax/fp32", "gpt-x"]),
    "run.running": ({"status": "running"}, ["worker took the run"]),
    "run.succeeded": ({"status": "succeeded"}, ["finished successfully"]),
    "run.failed": ({"status": "failed", "error": "no GPU on this worker: nvidia-smi not found"},
                   ["The run failed: no GPU on this worker: nvidia-smi not found."]),
    "run.cancelled": ({"status": "cancelled", "error": "cancelled by alice"}, ["cancelled: cancelled by alice"]),
    "run.requeued": ({"lost_worker": "gpu-1", "worker": "gpu-2"}, ["Worker gpu-1 was lost; gpu-2 restarted"]),
    "run.note": ({"note": "stopped early: the token budget of 1000 is spent"},
                 ["Note: Stopped early: the token budget of 1000 is spent."]),
    "worker.info": ({"host": "h100-a", "gpu": "NVIDIA H100", "nvcc_version": "12.4"},
                    ["Running on h100-a (NVIDIA H100, nvcc 12.4)."]),
    "turn.started": ({"round": 3, "debug": 0, "kind": "optimize"}, ["Turn 3 started."]),
    "agent.started": ({"round": 2, "debug": 1, "role": "coder", "model": "m"}, ["Turn 2.1: the Coder agent (m)"]),
    "agent.finished": ({"round": 1, "debug": 0, "role": "planner", "model": "m", "tokens_in": 2100, "tokens_out": 180,
                        "cost_usd": 0.0123, "latency_s": 4.23, "text": "a plan"},
                       ["Turn 1: the Planner agent answered (2,100 tokens in, 180 out, 4.2 s, $0.0123)."]),
    "agent.failed": ({"round": 1, "debug": 0, "role": "coder", "error": "HTTP 500 after 3 tries"},
                     ["Turn 1: the Coder agent's call failed: HTTP 500 after 3 tries."]),
    "turn.code": ({"round": 3, "debug": 0, "diff": "--- a\n+++ b\n@@\n-x\n+y\n+z\n", "diff_baseline": ""},
                  ["Turn 3: the Coder wrote new code (+2 −1 lines"]),
    "compile.started": ({"round": 3, "debug": 0, "command": "nvcc -O3"}, ["Turn 3: compiling."]),
    "compile.finished": ({"round": 3, "debug": 0, "ok": False, "command": "nvcc -O3",
                          "log": "candidate.cu(44): error: identifier \"x\" is undefined\n", "notes": []},
                         ['Turn 3 failed to compile: candidate.cu(44): error: identifier "x" is undefined.']),
    "turn.finished": ({"round": 3, "debug": 0, "kind": "optimize", "verdict": "incorrect", "valid": False,
                       "reason": "size N=16384: 12 mismatches", "score": None, "sizes": SIZES},
                      ["Turn 3 is not valid (incorrect): size N=16384: 12 mismatches (2 of 3 sizes correct; "
                       "speedups 2.00×–3.50×)."]),
    "best.updated": ({"round": 2, "debug": 1, "score": 180.45522529100995}, ["New best: Turn 2.1 with P 180×."]),
    "turn.submitted": ({"round": 4, "debug": 0, "kind": "manual"}, ["Turn 4: a manual kernel was submitted"]),
    "turn.verified": ({"round": 2, "debug": 1, "status": "disagrees", "gpu": "NVIDIA H100 80GB HBM3", "score": 1.2,
                       "summary": "P 1.20× in the fresh run against 6.00× recorded (-80 %, more than the ±10 % "
                                  "allowed)"},
                      ["Turn 2.1: the verification on NVIDIA H100 80GB HBM3 disagrees: P 1.20× in the fresh run "
                       "against 6.00× recorded"]),
}


def documented_types() -> set[str]:
    """Every event type named in the table of docs/events.md (`a` / `b` rows give two)."""
    rows = [line for line in DOCS.read_text(encoding="utf-8").splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([a-z]+\.[a-z]+)`", row.split("|")[1])}


def test_every_documented_event_type_has_its_own_sentence_and_a_test_case():
    assert documented_types() == set(SENTENCES) == set(CASES)


@pytest.mark.parametrize("type_", sorted(CASES))
def test_each_event_type_reads_as_a_sentence_with_its_key_numbers(type_):
    payload, expected = CASES[type_]
    text = describe_event(type_, payload)
    for words in expected:
        assert words in text, text
    assert "{" not in text and "'" not in text.replace("agent's", "")  # no dict reprs
    assert text.endswith(".")


def test_a_valid_turn_says_its_p_sizes_speedups_and_bottleneck():
    payload = {"round": 3, "debug": 0, "kind": "optimize", "verdict": "ok", "valid": True, "reason": "",
               "score": 2.3149, "sizes": SIZES[:2], "bottlenecks": ["memory_bandwidth"]}
    assert describe_event("turn.finished", payload) == (
        "Turn 3 is correct: P 2.31×; 2 of 2 sizes correct; speedups 2.00×–3.50×; bottleneck memory bandwidth.")


def test_the_baseline_turn_says_its_time_range():
    payload = {"round": 0, "debug": 0, "kind": "baseline", "verdict": "ok", "valid": True, "sizes": SIZES}
    assert describe_event("turn.finished", payload) == "The baseline is timed (20 µs–300 µs over 3 sizes)."


def test_a_compile_with_a_duration_says_how_long_it_took():
    payload = {"round": 3, "debug": 0, "ok": True, "seconds": 4.21, "notes": ["flags replaced"]}
    assert describe_event("compile.finished", payload) == "Turn 3 compiled in 4.2 s. Note: flags replaced."


def test_an_unknown_type_falls_back_to_a_readable_generic_sentence():
    text = describe_event("cache.evicted", {"entries": 12, "ratio": 0.12345678, "host": "w1", "detail": {"x": 1}})
    assert text == "Cache evicted: entries 12, ratio 0.1235, host w1."


def test_a_malformed_payload_of_a_known_type_still_gets_a_sentence():
    assert describe_event("turn.finished", {"sizes": "oops", "round": "x"})
    assert describe_event("agent.finished", None) == "A turn: the Agent agent answered (— tokens in, — out)."
    assert describe_event("", {}) == "Event."


def test_numbers_are_formatted_for_people():
    assert format_ms(0.0124) == "12.4 µs"
    assert format_ms(3.2) == "3.2 ms"
    assert format_ms(2500) == "2.5 s"
    assert format_seconds(192) == "3 min 12 s"
    assert format_p(2.3149) == "P 2.31×"
    assert format_p(None) == "P —"


def test_failures_say_why_and_short_reasons_clip_at_a_word():
    assert run_failure("failed", "") == "The run failed without a stated reason (see its events)."
    assert run_failure("cancelled", "") == "Cancelled by its owner or an administrator."
    assert run_failure("succeeded", "anything") == ""
    assert turn_failure("compile_error", "candidate failed") == "compile error: candidate failed"
    assert turn_failure("ok", "") == "" and turn_failure("queued", "") == ""
    long = "word " * 60
    clipped = short_reason(long)
    assert clipped.endswith("…") and len(clipped) <= 121 and "wor…" not in clipped
    assert short_reason("first line\nsecond line") == "first line"


def test_the_stream_message_carries_the_sentence(db, user, make_run):
    from apps.runs.events import event_append

    run = make_run(user)
    event = event_append(run.pk, "best.updated", {"round": 1, "debug": 0, "score": 1.5})
    message = event.as_message()
    assert message["text"] == "New best: Turn 1 with P 1.50×."
    assert json.loads(event.payload_json) == {"round": 1, "debug": 0, "score": 1.5}


def test_a_clipped_or_already_stopped_reason_ends_the_sentence_once():
    long = "No NVIDIA GPU on worker host w1: " + "runs need one to time and profile kernels " * 5
    assert describe_event("run.failed", {"status": "failed", "error": long}).endswith("kernels…")
    assert describe_event("run.failed", {"status": "failed", "error": "out of memory."}) == (
        "The run failed: out of memory.")
