"""bench/event_clock.cu (docs/benchmarks.md, "The event clock and the two-kernel call"): it builds with the real
nvcc as the `event-clock` stage of bench/gpu_run.sh builds it, and without a GPU it stops at once with the runtime's
reason instead of printing a table."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_probe_builds_and_without_a_gpu_says_why_it_cannot_run(tmp_path):
    exe = tmp_path / "event_clock"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-I", str(REPO / "tasks" / "_harness"), "-o", str(exe),
                    str(REPO / "bench" / "event_clock.cu")], check=True, capture_output=True, timeout=300)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    if run.returncode == 0:  # a GPU host: the table
        assert "%globaltimer" in run.stdout and "flush" in run.stdout
    else:
        assert run.returncode == 1 and run.stderr.startswith("device: ") and "median" not in run.stdout
