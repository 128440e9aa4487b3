"""bench/sample_shapes.py without a GPU: a stand-in binary prints what bench/sample_shapes.cu prints, one process
differing from the next, so the spread between processes and --pin are checked the way docs/benchmarks.md uses them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.stand_in import cpus_of_run, stand_in

REPO = Path(__file__).parents[1]

# Each run prints the median of its ordinal (10 us, then 12 us).
BODY = """print(f"fast 65536 A {10 + 2 * k:.3f} 0.0500")
print(f"fast 65536 B 5.000 {0.01 + 0.01 * k:.4f}")
"""


def shapes(*args: str) -> str:
    run = subprocess.run([sys.executable, str(REPO / "bench" / "sample_shapes.py"), *args], capture_output=True,
                         text=True, timeout=60, check=True)
    return run.stdout


def test_the_spread_between_processes_is_half_the_range_of_their_medians_over_the_median(tmp_path):
    out = shapes("--binary", str(stand_in(tmp_path / "shapes", BODY)), "--processes", "2")
    assert "| fast | 2^16 | synchronized | 11.00 | ±9.1 % | 5.0 % |" in out  # medians 10 and 12
    assert "| fast | 2^16 | queued | 5.00 | ±0.0 % | 2.0 % |" in out


def test_pin_runs_every_process_on_the_one_cpu_given(tmp_path):
    cpu = min(os.sched_getaffinity(0))
    exe = stand_in(tmp_path / "shapes", BODY)
    out = shapes("--binary", str(exe), "--processes", "2", "--pin", str(cpu))
    assert f"each on CPU {cpu}" in out
    assert [cpus_of_run(exe, k) for k in range(2)] == [str(cpu), str(cpu)]
