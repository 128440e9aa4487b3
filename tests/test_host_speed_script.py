"""bench/host_speed.py: the spread between fresh processes from a stand-in binary, and the real probe built with
nvcc and run without a GPU (its round trip then reads n/a)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.stand_in import cpus_of_run, stand_in

REPO = Path(__file__).parents[1]

# Each run prints a host median of 100 us, then 150 us, then 100 again.
BODY = """host = 150.0 if k % 3 == 1 else 100.0
print(f"cpu {os.sched_getaffinity(0).pop()} host {host} {host - 1} thread {host} trip 20.00 19.00")
"""


def host_speed(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "bench" / "host_speed.py"), *args], capture_output=True,
                          text=True, timeout=120)


def test_the_spread_is_half_the_range_of_the_processes_medians_over_their_median(tmp_path):
    run = host_speed("--binary", str(stand_in(tmp_path / "host_speed", BODY)), "--processes", "3")
    assert run.returncode == 0, run.stderr
    assert "host tables: ±25.0 %, max / min 1.50; round trip: ±0.0 %, max / min 1.00" in run.stdout
    assert "| - |" in run.stdout and "3 fresh processes, unpinned" in run.stdout


def test_per_cpu_pins_one_process_to_each_cpu_allowed_before_the_fresh_ones(tmp_path):
    exe = stand_in(tmp_path / "host_speed", BODY)
    cpus = sorted(os.sched_getaffinity(0))
    run = host_speed("--binary", str(exe), "--processes", "2", "--per-cpu")
    assert run.returncode == 0, run.stderr
    assert [cpus_of_run(exe, k) for k in range(len(cpus))] == [str(c) for c in cpus]
    assert cpus_of_run(exe, len(cpus)) == " ".join(map(str, cpus))  # the fresh ones: unpinned


def test_output_it_cannot_read_is_an_error_that_quotes_it(tmp_path):
    exe = tmp_path / "host_speed"
    exe.write_text(f"#!{sys.executable}\nprint('hello')\n")
    exe.chmod(0o755)
    run = host_speed("--binary", str(exe), "--processes", "2")
    assert run.returncode != 0 and "printed what this script does not read: 'hello'" in run.stderr


def test_one_process_is_refused_since_the_spread_is_between_processes(tmp_path):
    run = host_speed("--binary", str(stand_in(tmp_path / "host_speed", BODY)), "--processes", "1")
    assert run.returncode == 2 and "at least 2" in run.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_real_probe_builds_and_times_the_host_without_a_gpu():
    run = host_speed("--processes", "2")
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("| - |")]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[2]) > 0 and float(cells[4]) > 0  # host median, thread CPU time
    assert "steal time over the runs:" in run.stdout


# The probe's blocks mode (an argument): the host tables of one process, block by block, faster after two blocks.
BLOCKS_BODY = """if len(sys.argv) > 1:
    for b in range(int(sys.argv[1])):
        print(f"block {b} cpu 3 host {300.0 if b < 2 else 200.0:.2f}")
else:
    print("cpu 0 host 100.0 99.0 thread 100.0 trip 20.00 19.00")
"""


def test_blocks_show_the_speed_moving_inside_one_process(tmp_path):
    run = host_speed("--binary", str(stand_in(tmp_path / "host_speed", BLOCKS_BODY)), "--processes", "2",
                     "--blocks", "4")
    assert run.returncode == 0, run.stderr
    assert "**4 blocks of 300 host tables in one process** (CPUs 3)" in run.stdout
    assert "per-block medians (us): 300, 300, 200, 200" in run.stdout
    assert "host tables inside one process: ±20.0 %, max / min 1.50" in run.stdout


def test_no_aslr_gives_every_process_one_fixed_address_layout(tmp_path):
    body = """print(f"cpu 0 host {int(Path('/proc/self/personality').read_text(), 16) & 0x40000 and 100.0 or 500.0} "
      "99.0 thread 100.0 trip 20.00 19.00")
"""
    exe = stand_in(tmp_path / "host_speed", body)
    fixed = host_speed("--binary", str(exe), "--processes", "2", "--no-aslr")
    assert fixed.returncode == 0, fixed.stderr
    assert "one fixed address layout" in fixed.stdout and "| - | 0 | 100.0 |" in fixed.stdout
    assert "| - | 0 | 500.0 |" in host_speed("--binary", str(exe), "--processes", "2").stdout
