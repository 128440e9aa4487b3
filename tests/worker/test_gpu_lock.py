import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from worker.gpu_lock import GpuLockTimeout, gpu_lock

REPO = Path(__file__).parents[2]  # so the child can import worker


def test_a_second_holder_waits_for_the_first(tmp_path):
    holder = textwrap.dedent(f"""
        import sys, time
        from worker.gpu_lock import gpu_lock
        with gpu_lock("GPU-test", {str(tmp_path)!r}):
            print("held", flush=True)
            sys.stdin.readline()
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(GpuLockTimeout):
            with gpu_lock("GPU-test", tmp_path, timeout_s=0.3, poll_s=0.05):
                pass
        with gpu_lock("GPU-other", tmp_path, timeout_s=0.3):  # another GPU is not blocked
            pass
    finally:
        proc.communicate("\n", timeout=10)
    with gpu_lock("GPU-test", tmp_path, timeout_s=5) as waited:
        assert waited >= 0


def test_the_lock_is_released_when_its_holder_dies(tmp_path):
    code = textwrap.dedent(f"""
        import os
        from worker.gpu_lock import gpu_lock
        with gpu_lock("g", {str(tmp_path)!r}):
            os._exit(9)
    """)
    subprocess.run([sys.executable, "-c", code], cwd=REPO)
    with gpu_lock("g", tmp_path, timeout_s=2):
        pass
