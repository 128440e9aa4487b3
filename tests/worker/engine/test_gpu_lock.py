import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import worker.engine.gpu_lock as gpu_lock_module
from worker.engine.gpu_lock import GpuLockTimeout, gpu_lock

REPO = Path(__file__).parents[3]  # so the child can import worker


def test_a_second_holder_waits_for_the_first(tmp_path, monkeypatch):
    holder = textwrap.dedent(f"""
        import sys, time
        from worker.engine.gpu_lock import gpu_lock
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
        # Blocked, the second holder polls; the holder is told to release only during its first wait, so the
        # lock can only be taken after the release, and the wait it reports covers at least that poll.
        released = []

        def sleep_then_release(seconds):
            if not released:
                proc.stdin.write("\n")
                proc.stdin.flush()
                assert proc.wait(timeout=10) == 0
                released.append(seconds)
            real_sleep(seconds)

        real_sleep = gpu_lock_module.time.sleep
        clock = SimpleNamespace(monotonic=time.monotonic, time=time.time, sleep=sleep_then_release)
        monkeypatch.setattr(gpu_lock_module, "time", clock)
        with gpu_lock("GPU-test", tmp_path, timeout_s=30, poll_s=0.05) as waited:
            assert released == [0.05]  # it waited, and took the lock after the release
            assert waited > 0
    finally:
        if proc.poll() is None:
            proc.communicate("\n", timeout=10)


def test_the_lock_is_released_when_its_holder_dies(tmp_path):
    code = textwrap.dedent(f"""
        import os
        from worker.engine.gpu_lock import gpu_lock
        with gpu_lock("g", {str(tmp_path)!r}):
            os._exit(9)
    """)
    child = subprocess.run([sys.executable, "-c", code], cwd=REPO)
    assert child.returncode == 9  # it died holding the lock: the file names it as the holder
    assert (tmp_path / "gpu-g.lock").read_text().strip().isdigit()
    # Free at the first try: a timeout of 0 raises on any wait.
    with gpu_lock("g", tmp_path, timeout_s=0):
        assert (tmp_path / "gpu-g.lock").read_text().strip() == str(os.getpid())


def test_with_a_log_file_every_hold_is_recorded_and_holds_of_one_gpu_never_overlap(tmp_path, monkeypatch):
    import json
    import threading
    import time

    log = tmp_path / "holds.jsonl"
    monkeypatch.setenv("KW_GPU_LOCK_LOG", str(log))

    def hold(key):
        with gpu_lock(key, tmp_path / "locks"):
            time.sleep(0.2)

    threads = [threading.Thread(target=hold, args=(key,)) for key in ("gpu-a", "gpu-a", "gpu-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    holds = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(h["key"] for h in holds) == ["gpu-a", "gpu-a", "gpu-b"]
    a = sorted((h["start"], h["end"]) for h in holds if h["key"] == "gpu-a")
    assert a[0][1] <= a[1][0]  # the second holder of gpu-a started after the first let go
    b = next(h for h in holds if h["key"] == "gpu-b")
    assert b["start"] < a[0][1]  # another GPU's lock was held meanwhile
