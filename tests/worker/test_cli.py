"""`python -m worker`, run as a real subprocess the way a user runs it."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.worker.conftest import CANDIDATES, CPU_HARNESS, CPU_TASKS
from worker.engine import ncu
from worker.engine.results import Evaluation, Verdict

REPO = Path(__file__).parents[2]
NCU_CSV = Path(__file__).parent / "fixtures" / "ncu" / "vadd_h100_details.csv"


def cli(*args, tmp_path, no_gpu=True):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "CUDA_HOME", "LD_LIBRARY_PATH")}
    env.update(
        KW_BUILD_CACHE=str(tmp_path / "cache"),
        KW_TIMING_CACHE=str(tmp_path / "times"),
        KW_LOCK_DIR=str(tmp_path / "locks"),
        HOME=str(tmp_path),
    )
    if no_gpu:
        env["KW_NO_GPU"] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "worker",
            "--tasks-root",
            str(CPU_TASKS),
            "--harness-dir",
            str(CPU_HARNESS),
            *args,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_eval_compile_only_builds_without_a_gpu_and_says_so(tmp_path):
    out = tmp_path / "ev.json"
    res = cli(
        "eval",
        "--task",
        "scale",
        "--candidate",
        str(CANDIDATES / "scale_good.cu"),
        "--compile-only",
        "--json",
        str(out),
        tmp_path=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert "no GPU is present" in res.stdout
    # position-independent where the candidate is loaded after the lockdown (the default), linked in otherwise
    assert re.search(r"compile: nvcc -O3 -arch=sm_90 -std=c\+\+17 -Xptxas -v -lineinfo -DCCCL_DISABLE_NVTX "
                     r"-DNVTX_DISABLE (-Xcompiler -fPIC )?-c candidate\.cu -o candidate\.o", res.stdout), res.stdout
    ev = Evaluation.from_json(out.read_text())
    assert ev.kind == "compile_only" and ev.compile.ok


def test_eval_without_a_gpu_reports_no_gpu_with_exit_code_3(tmp_path):
    res = cli("eval", "--task", "scale", "--candidate", str(CANDIDATES / "scale_good.cu"), tmp_path=tmp_path)
    assert res.returncode == 3
    assert "NO_GPU" in res.stdout and "needs a GPU" in res.stdout
    assert "no GPU here" in res.stderr  # said up front, before the compile


def test_eval_of_a_rejected_candidate_exits_1_and_lists_the_rules(tmp_path):
    res = cli(
        "eval",
        "--task",
        "scale",
        "--candidate",
        str(CANDIDATES / "scale_calls_baseline.cu"),
        "--compile-only",
        tmp_path=tmp_path,
    )
    assert res.returncode == 1
    assert "REJECTED" in res.stdout and "RULE calls-baseline: line 3 calls scale()" in res.stdout


def test_eval_prints_the_compile_log_of_a_failed_build(tmp_path):
    res = cli(
        "eval",
        "--task",
        "scale",
        "--candidate",
        str(CANDIDATES / "scale_syntax_error.cu"),
        "--compile-only",
        tmp_path=tmp_path,
    )
    assert res.returncode == 1
    assert "COMPILE_ERROR" in res.stdout and "1 error detected" in res.stdout


def test_eval_of_an_unknown_task_is_a_usage_error(tmp_path):
    res = cli("eval", "--task", "nope", "--candidate", str(CANDIDATES / "scale_good.cu"), tmp_path=tmp_path)
    assert res.returncode == 2 and "no task named 'nope'" in res.stderr


def test_validate_tasks_needs_a_gpu(tmp_path):
    res = cli("validate-tasks", tmp_path=tmp_path)
    assert res.returncode == 3 and "there is none here" in res.stderr


def test_check_specs_lists_valid_and_invalid_specs(tmp_path):
    assert cli("check-specs", tmp_path=tmp_path).returncode == 0
    broken = tmp_path / "tasks" / "s" / "broken"
    broken.mkdir(parents=True)
    (broken / "spec.toml").write_text('name = "broken"\n')
    res = subprocess.run(
        [sys.executable, "-m", "worker", "--tasks-root", str(tmp_path / "tasks"), "check-specs"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1 and "ERROR" in res.stdout and "[category]" in res.stdout


def test_thresholds_from_saved_profiles_prints_otsu_thresholds_and_classes(tmp_path):
    (vadd,) = ncu.parse_details_csv(NCU_CSV.read_text())
    saved = []
    for i, (c, d, m) in enumerate([(10, 80, 85), (12, 70, 75), (60, 20, 25), (70, 10, 15), (8, 9, 12)]):
        sol = {**vadd.metrics[ncu.SOL]}
        sol.update(
            {
                "Compute (SM) Throughput": {"value": c, "unit": "%"},
                "DRAM Throughput": {"value": d, "unit": "%"},
                "Memory Throughput": {"value": m, "unit": "%"},
            }
        )
        kernel = ncu.KernelMetrics(0, f"k{i}", f"k{i}()", "", "", {ncu.SOL: sol})
        profile = ncu.to_profile(kernel, 0, {"N": 1}, "filtered")
        saved.append(
            Evaluation(f"task{i}", "fp32", Verdict.OK, kind="baseline", profiles=(profile,)).to_dict()
        )
    path = tmp_path / "profiles.json"
    path.write_text(json.dumps(saved))
    res = cli("thresholds", "--from-json", str(path), tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "Otsu thresholds over 5 kernels: compute 36.00%" in res.stdout
    assert "class distribution: compute_bound=2" in res.stdout


@pytest.mark.parametrize("command", ["eval", "baseline", "validate-tasks", "check-specs", "thresholds"])
def test_every_command_has_help(command, tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "worker", command, "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0 and "usage:" in res.stdout


def test_optimize_takes_the_timing_protocol_as_a_flag():
    from worker.cli import build_parser

    base = ["optimize", "--task", "vadd", "--llm", "script.json", "--out", "t.json"]
    assert build_parser().parse_args([*base, "--queued-timing"]).queued_timing is True
    assert build_parser().parse_args(base).queued_timing is False
