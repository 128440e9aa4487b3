"""Reading what a harness run left behind: exit status, checkpoint JSON, stderr."""

import ast
import dataclasses
import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from worker.engine import sandbox
from worker.engine.gpu_lock import cpu_claim
from worker.engine.harness import classify_crash, format_size, harness_argv, pair_cpu, read_result, run_in_turns
from worker.engine.sandbox import SandboxResult


def result(rc=0, timed_out=False, stderr="", stdout="", wall=1.0):
    sig = -rc if rc is not None and rc < 0 else None
    return SandboxResult(("kwbench",), rc, sig, timed_out, wall, stdout, stderr, "o", "e", ".")


def report(error=None, sizes=()):
    return {"mode": "check", "sizes": list(sizes), "error": error}


def checkpoint(phase="candidate call", index=1):
    return {
        "kind": "incomplete",
        "message": f"the harness ended (crash, kill or timeout) during {phase}",
        "code": None,
        "size_index": index,
        "seed": 20251123,
        "phase": phase,
    }


def test_a_complete_run_is_not_a_crash():
    assert classify_crash(result(0), report(), True) is None


def test_a_cuda_error_reported_in_json_is_classified_by_its_code():
    error = {
        "kind": "cuda_error",
        "message": "candidate call (synchronize): cudaErrorIllegalAddress (an illegal "
        "memory access was encountered)",
        "code": "cudaErrorIllegalAddress",
        "size_index": 2,
        "phase": "candidate call",
    }
    crash = classify_crash(result(1), report(error), True)
    assert crash.kind == "illegal_address" and crash.size_index == 2
    assert "cudaErrorIllegalAddress" in crash.message


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("cudaErrorMisalignedAddress", "misaligned_address"),
        ("cudaErrorInvalidAddressSpace", "illegal_address"),
        ("cudaErrorLaunchFailure", "launch_failure"),
        ("cudaErrorLaunchOutOfResources", "out_of_resources"),
        ("cudaErrorInvalidConfiguration", "invalid_configuration"),
        ("cudaErrorAssert", "device_assert"),
        ("cudaErrorIllegalInstruction", "illegal_instruction"),
        ("cudaErrorMemoryAllocation", "out_of_memory"),
    ],
)
def test_classifies_each_cuda_error_kind(code, kind):
    error = {"kind": "cuda_error", "message": f"candidate call: {code}", "code": code, "size_index": 0}
    assert classify_crash(result(1), report(error), True).kind == kind


def test_a_process_killed_mid_call_is_located_by_its_checkpoint_and_named_by_its_signal():
    crash = classify_crash(result(-signal.SIGSEGV), report(checkpoint()), True)
    assert crash.kind == "host_segfault" and crash.size_index == 1
    assert crash.message == "the harness died from SIGSEGV (during candidate call)"
    assert classify_crash(result(-signal.SIGABRT), report(checkpoint()), True).kind == "abort"


def test_a_device_assert_on_stderr_wins_over_the_bare_exit_status():
    stderr = (
        "kernel.cu:12: void k(): block: [0,0,0], thread: [3,0,0] Assertion `x < n` failed.\n"
        "CUDA error: device-side assert triggered"
    )
    crash = classify_crash(result(-signal.SIGABRT, stderr=stderr), report(checkpoint()), True)
    assert crash.kind == "device_assert" and crash.stderr_tail.endswith("device-side assert triggered")


def test_a_timeout_keeps_the_phase_it_was_in():
    crash = classify_crash(
        result(-signal.SIGKILL, timed_out=True, wall=30), report(checkpoint("timed calls", 2)), True
    )
    assert crash.kind == "timeout" and crash.size_index == 2 and "timed calls" in crash.message


def test_harness_side_errors_keep_their_kind():
    error = {"kind": "no_device", "message": "no CUDA device: driver too old", "size_index": None}
    assert classify_crash(result(1), report(error), True).kind == "no_device"
    error = {"kind": "baseline_failed", "message": "the baseline modified input A", "size_index": 0}
    assert classify_crash(result(1), report(error), True).kind == "baseline_failed"


def test_exit_zero_without_json_means_the_candidate_ended_the_process():
    crash = classify_crash(result(0), None, False)
    assert crash.kind == "missing_output" and "exit early" in crash.message


def test_reads_non_finite_numbers_written_as_strings_or_bare(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"sizes": [{"first_mismatch": {"got": "nan", "expected": 1.5}}], "error": null}')
    assert read_result(path)["sizes"][0]["first_mismatch"]["got"] == "nan"
    path.write_text('{"sizes": [{"first_mismatch": {"got": nan, "abs_err": -inf}}], "error": null}')
    mismatch = read_result(path)["sizes"][0]["first_mismatch"]
    assert mismatch["got"] != mismatch["got"] and mismatch["abs_err"] == float("-inf")
    path.write_text('{"truncated": ')
    assert read_result(path) is None


def test_builds_the_documented_command_line(scale_spec):
    spec = dataclasses.replace(scale_spec, constants={"epsilon": 1e-05, "alpha": 2})
    argv = harness_argv(
        "./kwbench", spec, "fp32", "check", "candidate", [{"N": 1024}, {"N": 0.5}], "out.json"
    )
    assert argv == [
        "./kwbench",
        "--mode",
        "check",
        "--impl",
        "candidate",
        "--size",
        "N=1024",
        "--size",
        "N=0.5",
        "--const",
        "epsilon=1e-05",
        "--const",
        "alpha=2",
        "--seeds",
        "3",
        "--seed-base",
        "20251122",
        "--atol",
        "0.0001",
        "--rtol",
        "0.0001",
        "--out",
        "out.json",
    ]
    timed = harness_argv(
        "./kwbench", spec, "bf16", "time", "baseline", [{"N": 8}], "t.json", iters=7, warmup=1
    )
    tol = spec.tolerance("bf16")
    assert timed[-14:] == ["--seed-base", "20251122", "--warmup", "1", "--warmup-ms", "100.0", "--iters", "7",
                           "--atol", repr(tol.atol), "--rtol", repr(tol.rtol), "--out", "t.json"]
    batched = harness_argv("./kwbench", spec, "bf16", "time", "baseline", [{"N": 8}, {"N": 16}], "t.json",
                           batches=[1, 25])
    assert batched[batched.index("--batch-fixed") + 1] == "1,25"
    # All ones: the per-call protocol, nothing to pass
    assert "--batch-fixed" not in harness_argv("./kwbench", spec, "bf16", "time", "baseline", [{"N": 8}], "t.json",
                                               batches=[1])
    # Synchronized samples unless queued ones are asked for
    assert "--queued" not in timed
    queued = harness_argv("./kwbench", spec, "bf16", "time", "baseline", [{"N": 8}], "t.json", queued=True)
    assert queued[queued.index("--queued") + 1] == "1"
    # A bench script's experiment flags go last, before --out, as given
    flushed = harness_argv("./kwbench", spec, "bf16", "time", "baseline", [{"N": 8}], "t.json",
                           extra=("--l2-flush-mode", "read"))
    assert flushed[-4:] == ["--l2-flush-mode", "read", "--out", "t.json"]
    assert format_size({"M": 64.0, "K": 128}) == "M=64,K=128"


# A child that takes `turns` turns on the descriptors it is given, writing when each began and ended.
TURN_TAKER = """
import os, sys, time
fd_in, fd_out, turns, log = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with open(log, "w") as fh:
    for _ in range(turns):
        if fd_in >= 0 and os.read(fd_in, 1) != b"t":  # the other side ended: run on alone
            fd_in = -1
        began = time.monotonic()
        time.sleep(0.01)
        fh.write(f"{began} {time.monotonic()}\\n")
        try:
            os.write(fd_out, b"t")
        except BrokenPipeError:  # (kw_turns.h stops writing too)
            pass
"""


def _turn_taker(tmp_path, name: str, turns: int):
    def start(fds: tuple[int, int]):
        log = tmp_path / f"{name}.log"
        argv = [sys.executable, "-c", TURN_TAKER, str(fds[0]), str(fds[1]), str(turns), str(log)]
        res = sandbox.run(argv, tmp_path, 30, name=name, pass_fds=fds)
        return res, [tuple(map(float, line.split())) for line in log.read_text().splitlines()] if log.exists() else []
    return start


def test_two_children_in_turns_alternate_and_one_that_ends_early_leaves_the_other_to_finish_alone(tmp_path):
    started = time.monotonic()
    (first, first_turns), (second, second_turns) = run_in_turns(_turn_taker(tmp_path, "first", 3),
                                                                 _turn_taker(tmp_path, "second", 8))
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
    assert len(first_turns) == 3 and len(second_turns) == 8
    merged = sorted([(a, b, "first") for a, b in first_turns] + [(a, b, "second") for a, b in second_turns])
    assert all(prev[1] <= nxt[0] for prev, nxt in zip(merged, merged[1:], strict=False)), "two turns overlapped"
    assert [who for *_, who in merged] == ["first", "second"] * 3 + ["second"] * 5
    assert time.monotonic() - started < 20  # nobody waited for a turn that never came


def test_a_side_that_fails_before_starting_its_child_does_not_leave_the_other_waiting(tmp_path):
    # E.g. a confinement policy that could not be built: its pipe ends were never handed to a child, so they are
    # closed, and the other side sees the end of the pipe at once instead of waiting for its timeout (30 s here).
    def broken(fds):
        raise RuntimeError("no policy")

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="no policy"):
        run_in_turns(broken, _turn_taker(tmp_path, "second", 4))
    assert time.monotonic() - started < 15
    assert len((tmp_path / "second.log").read_text().splitlines()) == 4  # it ran on alone


def test_both_sides_of_a_pair_are_given_one_cpu_this_process_may_use(tmp_path):
    # The host's speed changes from CPU to CPU on a VM (docs/benchmarks.md): a pair taking turns shares one.
    with pair_cpu(tmp_path) as cpus:
        assert len(cpus) == 1 and cpus[0] in os.sched_getaffinity(0)


def test_pairs_of_workers_on_several_gpus_never_share_a_cpu_and_a_cpu_is_free_again_after_its_pair(tmp_path):
    allowed = os.sched_getaffinity(0)
    claim = (f"import sys; from worker.engine.harness import pair_cpu\n"
             f"with pair_cpu({str(tmp_path)!r}) as c:\n    print(c, flush=True); sys.stdin.read()")
    # One process per allowed CPU, each holding its claim until all have said theirs: each gets a CPU of its own.
    procs = [subprocess.Popen([sys.executable, "-c", claim], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=Path(__file__).parents[3]) for _ in allowed]
    cpus = [ast.literal_eval(p.stdout.readline()) for p in procs]
    for p in procs:
        p.communicate(timeout=60)
    assert all(len(c) == 1 for c in cpus) and {c[0] for c in cpus} == allowed
    # While every CPU is held, one more pair runs unpinned rather than doubling up on a CPU.
    with ExitStack() as held:
        for cpu in allowed:
            held.enter_context(cpu_claim([cpu], tmp_path))
        with pair_cpu(tmp_path) as extra:
            assert extra == ()
    with pair_cpu(tmp_path) as again:  # released with its block
        assert len(again) == 1
