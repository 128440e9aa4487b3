"""The GPU clock watch (worker/engine/clock.py): a timing the GPU's own slowdown spoiled is timed again, and a
second spoiled one is said, never silent. Without a GPU, nvidia-smi is a stand-in script that prints what the
driver would; the last test reads the real clock on a GPU machine."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from worker.engine import toolchain as tc
from worker.engine.clock import ClockReading, ClockWatch, parse_line, summarize
from worker.engine.context import SLOWED_FLAG, EvalContext, EvalOptions
from worker.engine.gpu import GpuInfo
from worker.engine.results import Verdict
from worker.engine.verification import Outcome, compare

MAX = 1980
CLEAN = f"1980, {MAX}, 0x0000000000000000"
POWER_CAPPED = f"1455, {MAX}, 0x0000000000000004"
THERMAL = f"1650, {MAX}, 0x0000000000000020"


def test_a_line_of_nvidia_smi_is_a_reading_and_anything_else_is_not():
    assert parse_line("1980, 1980, 0x0000000000000004\n") == ClockReading(1980, 1980, 0x4)
    assert parse_line("[N/A], 1980, 0x0") is None
    assert parse_line("No devices were found") is None
    assert parse_line("") is None


def test_only_a_slowdown_under_the_maximum_clock_counts():
    at_max_with_a_reason = ClockReading(1980, MAX, 0x08)  # a reason raised for a moment at a clock change
    idle = ClockReading(345, MAX, 0x01)  # idle and application clocks are not slowdowns
    capped = ClockReading(1455, MAX, 0x04)
    thermal = ClockReading(1650, MAX, 0x20 | 0x01)
    assert not at_max_with_a_reason.slowed and not idle.slowed
    report = summarize([at_max_with_a_reason, idle, capped, thermal])
    assert report is not None and report.throttled and report.slowed == 2
    assert report.reasons == ("software power cap", "software thermal slowdown")
    assert (report.sm_min_mhz, report.sm_max_mhz, report.max_mhz) == (345, 1980, MAX)
    # The lowest slowed clock, not the idle reading's 345 MHz.
    assert "software power cap" in report.sentence() and "down to 1455 MHz of 1980" in report.sentence()
    assert summarize([]) is None


def _stand_in_smi(folder: Path, runs: list[str]) -> Path:
    """An executable named nvidia-smi: a one-shot query prints CLEAN; the k-th polling (-lms) prints runs[k]
    every 20 ms until it is stopped (the last entry for any later one)."""
    folder.mkdir(exist_ok=True)
    (folder / "runs").write_text("\n".join(runs) + "\n")
    script = folder / "nvidia-smi"
    script.write_text(f"""#!/bin/bash
case " $* " in *" -lms "*) ;; *) echo "{CLEAN}"; exit 0 ;; esac
n=$(cat {folder}/count 2>/dev/null || echo 0); echo $((n + 1)) > {folder}/count
line=$(sed -n "$((n + 1))p" {folder}/runs); [ -n "$line" ] || line=$(tail -n 1 {folder}/runs)
while :; do echo "$line"; sleep 0.02; done
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_the_watch_reports_what_the_driver_printed_while_the_block_ran(tmp_path):
    smi = _stand_in_smi(tmp_path / "bin", [POWER_CAPPED])
    with ClockWatch(0, smi=str(smi)) as watch:
        time.sleep(0.4)
    assert watch.report is not None and watch.report.readings >= 3
    assert watch.report.throttled and watch.report.reasons == ("software power cap",)


def test_without_nvidia_smi_or_a_gpu_the_watch_reports_nothing_and_fails_nothing(tmp_path):
    with ClockWatch(0, smi=str(tmp_path / "absent")) as watch:
        pass
    assert watch.report is None
    with ClockWatch(None) as watch:
        pass
    assert watch.report is None


def test_switched_off_the_watch_starts_no_poll(tmp_path, monkeypatch):
    smi = _stand_in_smi(tmp_path / "bin", [POWER_CAPPED])
    monkeypatch.setenv("KW_CLOCK_WATCH", "off")
    with ClockWatch(0, smi=str(smi)) as watch:
        time.sleep(0.2)
    assert watch.report is None and not (tmp_path / "bin" / "count").exists()


class _Spec:
    name = "t"


class _Chain:
    gpu = GpuInfo(0, "NVIDIA H100", "GPU-test", "9.0", 81559, "580.0")

    def describe(self):
        return {}


def _context(tmp_path: Path, runs: list[str], monkeypatch) -> EvalContext:
    smi = _stand_in_smi(tmp_path / "bin", runs)
    monkeypatch.setenv("PATH", f"{smi.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr("worker.engine.context.RETIME_PAUSE_S", 0.0)
    options = EvalOptions(lock_dir=str(tmp_path / "locks"), lock_timeout_s=5)
    return EvalContext(_Spec(), "fp32", options, _Chain(), tmp_path / "work", None)


def _timing(calls: list[int], ctx: EvalContext | None = None):
    def run():
        calls.append(len(calls))
        if ctx is not None:
            with ctx.gpu():  # as a harness run does: the lock timed() holds is held on, not waited for
                time.sleep(0.3)
        else:
            time.sleep(0.3)
        return f"run {len(calls)}"
    return run


def test_a_timing_the_gpu_slowed_down_is_timed_again_and_the_notes_say_why(tmp_path, monkeypatch):
    ctx = _context(tmp_path, [POWER_CAPPED, CLEAN], monkeypatch)
    calls: list[int] = []
    assert ctx.timed("time", "the candidate", _timing(calls)) == "run 2"
    assert len(calls) == 2 and not ctx.slowed
    ev = ctx.base(verdict=Verdict.OK, reason="r")
    assert any(n.startswith("the candidate was timed again: the GPU slowed itself down (software power cap)")
               for n in ev.notes), ev.notes
    assert ctx.phases["time"] > 0.5  # both runs count as the phase's time


def test_a_timing_slowed_down_twice_is_kept_and_said(tmp_path, monkeypatch):
    ctx = _context(tmp_path, [THERMAL], monkeypatch)
    calls: list[int] = []
    assert ctx.timed("time_baseline", "the baseline", _timing(calls)) == "run 2"
    assert len(calls) == 2 and "the baseline" in ctx.slowed
    ev = ctx.base(verdict=Verdict.OK, reason="r")
    assert any("and again when timed once more; its times are slower than this GPU's own" in n for n in ev.notes)
    assert SLOWED_FLAG in ev.flags  # a review flag, which a verification's disagreement then names


def test_a_timing_power_capped_twice_says_the_call_may_itself_hold_the_gpu_at_its_power_limit(tmp_path, monkeypatch):
    # spmm_csr's largest size on an H100 drew about 700 W and was capped in every timing (docs/benchmarks.md).
    ctx = _context(tmp_path, [POWER_CAPPED], monkeypatch)
    ctx.timed("time", "the candidate", _timing([]))
    ev = ctx.base(verdict=Verdict.OK, reason="r")
    assert any("the call may itself draw the GPU to its power limit, and then these capped times are its speed"
               in n for n in ev.notes), ev.notes
    assert SLOWED_FLAG in ev.flags


def test_a_failed_run_is_kept_whatever_the_clock_did_so_no_candidate_gets_a_second_chance(tmp_path, monkeypatch):
    # A candidate caught doing less work could burn power to slow the GPU down and ask for another try: none.
    ctx = _context(tmp_path, [POWER_CAPPED, CLEAN], monkeypatch)
    calls: list[int] = []
    assert ctx.timed("time", "the candidate", _timing(calls), failed=lambda r: r == "run 1") == "run 1"
    assert len(calls) == 1 and not ctx.retimed


def test_a_verification_whose_fresh_timing_was_slowed_decides_nothing_and_says_to_verify_again(tmp_path,
                                                                                                monkeypatch):
    ctx = _context(tmp_path, [POWER_CAPPED], monkeypatch)
    ctx.timed("time", "the candidate", _timing([]))
    fresh = ctx.base(verdict=Verdict.OK, reason="r", score=1.5)
    said = compare(Verdict.OK, 2.0, "NVIDIA H100", fresh)
    assert said.outcome is Outcome.UNDECIDED and not said.verified  # neither confirmed nor contradicted
    assert "the GPU slowed itself down while the fresh run was timed" in said.summary, said.summary
    assert "verify again once the GPU runs at its full clock" in said.summary


def test_a_slowed_fresh_run_whose_p_still_agrees_is_verified_and_one_that_fails_still_disagrees(tmp_path,
                                                                                                monkeypatch):
    ctx = _context(tmp_path, [POWER_CAPPED], monkeypatch)
    ctx.timed("time", "the candidate", _timing([]))
    assert compare(Verdict.OK, 1.55, "NVIDIA H100", ctx.base(verdict=Verdict.OK, reason="r", score=1.5)).verified
    wrong = compare(Verdict.OK, 1.5, "NVIDIA H100", ctx.base(verdict=Verdict.INCORRECT, reason="out[3] wrong"))
    assert wrong.outcome is Outcome.DISAGREES  # a clock does not excuse a wrong output


def test_a_clean_timing_runs_once_inside_the_gpus_lock_and_adds_no_note(tmp_path, monkeypatch):
    ctx = _context(tmp_path, [CLEAN], monkeypatch)
    calls: list[int] = []
    ctx.timed("time", "the candidate", _timing(calls, ctx))
    assert ctx.phases["lock_wait"] < 1  # taken once, by timed(): the run's own gpu() did not wait for it
    assert len(calls) == 1 and not ctx.slowed and not ctx.retimed
    assert not [n for n in ctx.base(verdict=Verdict.OK, reason="r").notes if "slowed" in n]


@pytest.mark.gpu
def test_the_watch_reads_the_real_gpus_clock_while_it_works(tmp_path, shared_build_cache):
    chain = tc.detect()
    if chain.gpu is None:
        pytest.skip(chain.gpu_reason)
    from testing.gpu_candidates import LIBRARY
    from worker.formats.cuda.evaluation import EvalOptions, evaluate_baseline

    with ClockWatch(chain.gpu.smi_id) as watch:
        ev = evaluate_baseline(LIBRARY["softmax"], "fp32", EvalOptions(
            iters=20, build_cache=str(shared_build_cache), timing_cache=str(tmp_path)), chain=chain)
    assert ev.verdict == Verdict.OK, ev.reason
    report = watch.report
    assert report is not None and report.readings >= 5, report
    assert 0 < report.sm_min_mhz <= report.sm_max_mhz <= report.max_mhz, report
