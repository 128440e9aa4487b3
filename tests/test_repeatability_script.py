"""bench/repeatability.py without a GPU: its tables and summary lines from a resumed JSON of both kinds of "after"
run (batched processes alone, interleaved pairs), so P repeat is computed the way docs/benchmarks.md reports it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]
_spec = importlib.util.spec_from_file_location("repeatability", REPO / "bench" / "repeatability.py")
repeatability = importlib.util.module_from_spec(_spec)
sys.modules["repeatability"] = repeatability
_spec.loader.exec_module(repeatability)


def timing(ms: float, cv: float = 0.01) -> dict:
    return {"mean_ms": ms, "cv": cv}


def run(scale: float, cv: float = 0.01) -> dict:
    """vector_add's five sizes, every time `scale` x 0.1 ms; the empty call 0.01 ms."""
    return {**{str(i): timing(0.1 * scale, cv) for i in range(5)}, "floor": 0.01}


def test_p_repeat_is_computed_against_the_reference_alone_and_within_each_pair_interleaved(tmp_path, capsys):
    saved = [
        {"task": "vector_add", "precision": "fp32", "runs": {  # alone: 1 % apart; batched: 5 % apart
            "protocol": "batched", "reference": run(1.0), "before-1": run(1.0), "before-2": run(1.01),
            "after-1": run(1.0), "after-2": run(1.05, cv=0.03)}},
        {"task": "elu", "precision": "fp32", "runs": {  # the second pair's host 30 % slower on both sides
            "protocol": "interleaved", "reference": run(1.0), "before-1": run(1.0), "before-2": run(1.3),
            "after-1": {"candidate": run(1.0), "baseline": run(1.0)},
            "after-2": {"candidate": run(1.3), "baseline": run(1.3)}}},
        {"task": "gelu", "precision": "fp32", "runs": {  # the queued protocol's pairs (a call that round-trips)
            "protocol": "queued-interleaved", "reference": run(1.0), "before-1": run(1.0), "before-2": run(1.0),
            "after-1": {"candidate": run(1.0), "baseline": run(1.0)},
            "after-2": {"candidate": run(1.2), "baseline": run(1.21)}}},
    ]
    out = tables_of(saved, tmp_path, capsys)
    assert "| vector_add | fp32 | 5 | 100.0 - 100.0 | 1.00% | 5.00% | 0 of 5 | 5 of 5 | 10.00 / 10.00 |" in out
    assert "before: P within 2 % for 2 of 3 tasks (67 %)" in out  # elu alone: 30 % apart
    assert "after: P within 2 % for 2 of 3 tasks (67 %)" in out  # elu and gelu in pairs: the drift divides out
    assert "| gelu | fp32 | 5 | 100.0 - 100.0 | 0.00% | 0.83% |" in out
    assert "| vector_add | fp32 | N=1024 | 100.0 | 10.0 | 1.00% | 3.00% |" in out


def test_the_jsons_of_several_shards_resume_into_one_table(tmp_path, capsys):
    runs = {"protocol": "queued", "reference": run(1.0), "before-1": run(1.0), "before-2": run(1.0),
            "after-1": run(1.0), "after-2": run(1.0)}
    paths = []
    for k, task in enumerate(("vector_add", "elu")):
        paths += ["--resume", str(tmp_path / f"shard{k}.json")]
        Path(paths[-1]).write_text(json.dumps([{"task": task, "precision": "fp32", "runs": runs}]))
    assert repeatability.main(["--precision", "fp32", "--task", "none", *paths]) == 0
    out = capsys.readouterr().out
    assert "| vector_add | fp32 | 5 |" in out and "| elu | fp32 | 5 |" in out
    assert "after: P within 2 % for 2 of 2 tasks (100 %)" in out


def test_the_after_runs_batch_short_calls_unless_told_not_to_and_queue_when_asked():
    def stats(ms: float) -> dict:
        return {"samples": 50, "mean_ms": ms, "median_ms": ms, "min_ms": ms, "max_ms": ms, "std_ms": 0.0, "cv": 0.0}

    ref = repeatability.reference_times({0: stats(0.01), 1: stats(1.0), "floor": 0.005})  # 10 us and 1 ms
    assert set(ref) == {0, 1}
    assert repeatability.after_flags(ref, 2, "batched", 0.05) == ("--batch-fixed", "50,1")
    assert repeatability.after_flags(ref, 2, "queued", 0.05) == ("--batch-fixed", "50,1", "--queued", "1")
    assert repeatability.after_flags(ref, 2, "queued", 0.0) == ("--queued", "1")


@pytest.mark.skipif(Path("/proc/sys/kernel/randomize_va_space").read_text().strip() == "0",
                    reason="address-space randomization is off on this machine")
def test_no_aslr_gives_every_later_child_the_same_address_layout():
    # In a child interpreter, so this test process keeps its own randomization for whatever runs after it.
    code = (
        "import subprocess, sys; sys.path.insert(0, sys.argv[1]); import runpy\n"
        "mod = runpy.run_path(sys.argv[1] + '/bench/repeatability.py', run_name='probe')\n"
        "stack = lambda: subprocess.run(['grep', '-m1', 'stack', '/proc/self/maps'], capture_output=True,"
        " text=True).stdout\n"
        "before = {stack() for _ in range(3)}\n"
        "mod['no_aslr']()\n"
        "after = {stack() for _ in range(3)}\n"
        "print(len(before), len(after))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(REPO)], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["3", "1"], out  # randomized stacks before, one and the same after


def test_a_run_without_before_reads_n_a_there_and_summarizes_only_after(tmp_path, capsys):
    """--skip-before times the reference and the two after runs only (three processes a task, not five)."""
    runs = {"protocol": "queued", "reference": run(1.0), "after-1": run(1.0), "after-2": run(1.01, cv=0.03)}
    path = tmp_path / "after-only.json"
    path.write_text(json.dumps([{"task": "vector_add", "precision": "fp32", "runs": runs}]))
    assert repeatability.main(["--precision", "fp32", "--task", "none", "--resume", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| vector_add | fp32 | 5 | 100.0 - 100.0 | n/a | 1.00% | n/a | 5 of 5 |" in out
    assert "| vector_add | fp32 | N=1024 | 100.0 | 10.0 | n/a | 3.00% |" in out
    assert "after: P within 2 % for 1 of 1 tasks (100 %)" in out and "before: P within" not in out


def with_floor(timings: dict, floor_ms: float) -> dict:
    return {**timings, "floor": floor_ms}


def tables_of(saved: list[dict], tmp_path: Path, capsys) -> str:
    """What the script prints for `saved` resumed as an earlier run's --json, nothing timed."""
    path = tmp_path / "resume.json"
    path.write_text(json.dumps(saved))
    assert repeatability.main(["--precision", "fp32", "--task", "none", "--resume", str(path)]) == 0
    return capsys.readouterr().out


def test_a_miss_whose_two_processes_had_a_slower_host_is_named_as_the_hosts(tmp_path, capsys):
    saved = [  # FFT: P 20 % apart and the empty call 30 % slower in the second process; rms_norm: 3 % apart only
        {"task": "FFT", "precision": "fp32", "runs": {
            "protocol": "queued", "reference": run(1.0), "after-1": with_floor(run(1.0), 0.0140),
            "after-2": with_floor(run(1.2), 0.0182)}},
        {"task": "rms_norm", "precision": "fp32", "runs": {
            "protocol": "queued", "reference": run(1.0), "after-1": with_floor(run(1.0), 0.0140),
            "after-2": with_floor(run(1.03), 0.0141)}},
        {"task": "elu", "precision": "fp32", "runs": {
            "protocol": "queued", "reference": run(1.0), "after-1": run(1.0), "after-2": run(1.0)}},
    ]
    out = tables_of(saved, tmp_path, capsys)
    assert "| 14.00 / 18.20 |" in out
    assert ("after: 1 of the 2 misses had the host's speed move between their two processes (empty call 5 % or "
            "more apart): FFT") in out


def test_a_process_the_gpus_slowdown_spoiled_is_named_with_its_clock(tmp_path, capsys):
    capped = {"readings": 40, "slowed": 12, "sm_min_mhz": 1455, "sm_max_mhz": 1980, "max_mhz": 1980,
              "reasons": ["software power cap"]}
    clean = {**capped, "slowed": 0, "sm_min_mhz": 1980, "reasons": []}
    saved = [
        {"task": "spmm_csr", "precision": "fp32", "runs": {
            "protocol": "queued", "reference": {**run(1.0), "clock": clean},
            "after-1": {**run(1.0), "clock": clean}, "after-2": {**run(1.19), "clock": capped}}},
        {"task": "elu", "precision": "fp32", "runs": {
            "protocol": "queued", "reference": run(1.0), "after-1": run(1.0), "after-2": run(1.0)}},
    ]
    out = tables_of(saved, tmp_path, capsys)
    assert ("the GPU's clock was read during 3 of 6 processes (or pairs); it slowed itself down during 1 tasks' "
            "runs: spmm_csr[fp32] in after-2 (software power cap, 1455 MHz of 1980)") in out
    assert "| spmm_csr | fp32 | 5 | 100.0 - 100.0 |" in out  # the clock entry is no size
