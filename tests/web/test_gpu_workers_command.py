"""`manage.py gpu_workers` (what `make worker` runs) starting and stopping real Celery workers.

The host's GPUs come from a stand-in nvidia-smi (tests/support/fake_nvidia_smi.py: this machine has
no driver); everything else is real: the launcher, one Celery worker process per GPU on the embedded
broker, each pinned by CUDA_VISIBLE_DEVICES and reading its own GPU back through nvidia-smi, the
heartbeats into the registry, and the shutdown forwarded from the launcher.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.support import fake_nvidia_smi
from tests.support.stack import ROOT, Stack, free_port

pytestmark = pytest.mark.slow
HOST = socket.gethostname()


@pytest.fixture
def stack(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")}
    env.update(KERNELWEB_VAR_DIR=str(tmp_path / "var"), KW_LOCK_DIR=str(tmp_path / "locks"),
               WORKER_HEARTBEAT_SECONDS="0.5", PYTHONUNBUFFERED="1")
    stack = Stack(base=tmp_path, port=free_port(), env=env)
    stack.manage("migrate", "--noinput")
    yield stack
    stack.stop()


def with_smi(stack: Stack, gpus, **kwargs) -> dict:
    folder = fake_nvidia_smi.install(stack.base / "smi", gpus, **kwargs)
    return {"PATH": f"{folder}{os.pathsep}{stack.env['PATH']}"}


def launch(stack: Stack, *args: str, **env: str) -> subprocess.Popen:
    stack._spawn("launcher", [sys.executable, "manage.py", "gpu_workers", *args], **env)
    return stack.processes[-1][0]


def workers(stack: Stack) -> dict[str, dict]:
    rows = stack.query("SELECT name, pid, gpu_index, gpu_name, gpu_uuid, driver, queues, last_seen, stopped_at "
                       "FROM fleet_worker")
    keys = ("pid", "gpu_index", "gpu_name", "gpu_uuid", "driver", "queues", "last_seen", "stopped_at")
    return {name: dict(zip(keys, rest, strict=True), queues=json.loads(rest[5])) for name, *rest in rows}


def wait_for(stack: Stack, predicate, what: str, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = workers(stack)
        except Exception:  # noqa: BLE001 - the table may be locked for a moment by a worker's write
            found = {}
        if predicate(found):
            return found
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}: {workers(stack)}\n{stack.log('launcher')[-5000:]}")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_one_pinned_worker_per_gpu_registers_beats_and_stops_on_sigterm(stack):
    gpus = [fake_nvidia_smi.gpu(0, "NVIDIA H100 80GB HBM3"), fake_nvidia_smi.gpu(1, "NVIDIA A100-SXM4-80GB", cap="8.0")]
    launcher = launch(stack, **with_smi(stack, gpus))
    names = {f"gpu0@{HOST}", f"gpu1@{HOST}"}
    found = wait_for(stack, lambda w: set(w) == names, "both workers to register")
    gpu0, gpu1 = found[f"gpu0@{HOST}"], found[f"gpu1@{HOST}"]
    # Each worker found its own GPU through CUDA_VISIBLE_DEVICES=<uuid>: the pinning works end to end.
    assert (gpu0["gpu_index"], gpu0["gpu_name"], gpu0["gpu_uuid"], gpu0["queues"]) == (
        0, "NVIDIA H100 80GB HBM3", gpus[0]["uuid"], ["gpu", "gpu.h100"])
    assert (gpu1["gpu_index"], gpu1["gpu_name"], gpu1["driver"], gpu1["queues"]) == (
        1, "NVIDIA A100-SXM4-80GB", "550.54.15", ["gpu", "gpu.a100"])
    wait_for(stack, lambda w: all(w[n]["last_seen"] > found[n]["last_seen"] for n in names), "a heartbeat")

    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=60) == 0, stack.log("launcher")[-5000:]
    after = workers(stack)
    assert all(after[n]["stopped_at"] for n in names)  # each said goodbye: shown stopped at once
    assert all(gone(found[n]["pid"]) for n in names)
    log = stack.log("launcher")
    assert f"SIGTERM: warm shutdown → gpu0@%h (pid {gpu0['pid']})" in log
    assert f"SIGTERM: warm shutdown → gpu1@%h (pid {gpu1['pid']})" in log
    assert "-Q gpu.a100,gpu --concurrency 1 -n gpu1@%h" in log


def test_a_host_whose_driver_fails_gets_one_worker_on_the_generic_queue(stack):
    launcher = launch(stack, **with_smi(stack, [], failure=fake_nvidia_smi.DRIVER_DOWN))
    found = wait_for(stack, lambda w: f"nogpu@{HOST}" in w, "the no-GPU worker")
    worker = found[f"nogpu@{HOST}"]
    assert (worker["gpu_index"], worker["gpu_name"], worker["queues"]) == (None, "", ["gpu"])
    launcher.send_signal(signal.SIGINT)  # Ctrl-C in a terminal: a warm shutdown, a clean exit
    assert launcher.wait(timeout=60) == 0, stack.log("launcher")[-3000:]
    assert workers(stack)[f"nogpu@{HOST}"]["stopped_at"] and gone(worker["pid"])
    assert "No GPU on this host (nvidia-smi failed: NVIDIA-SMI has failed" in stack.log("launcher")


def test_a_worker_that_dies_is_reported_and_the_others_keep_running(stack):
    gpus = [fake_nvidia_smi.gpu(0, "NVIDIA H200"), fake_nvidia_smi.gpu(1, "NVIDIA H200")]
    launcher = launch(stack, **with_smi(stack, gpus))
    found = wait_for(stack, lambda w: len(w) == 2, "both workers")
    victim = found[f"gpu1@{HOST}"]["pid"]
    pool = [int(p) for p in open(f"/proc/{victim}/task/{victim}/children").read().split()]
    os.kill(victim, signal.SIGKILL)  # the OOM killer, say
    try:
        deadline = time.monotonic() + 30
        while "exited with status" not in stack.log("launcher") and time.monotonic() < deadline:
            time.sleep(0.2)
        log = stack.log("launcher")
        assert f"gpu1@%h (pid {victim}) exited with status -9; 1 still running (nothing is restarted)" in log
        assert launcher.poll() is None and not gone(found[f"gpu0@{HOST}"]["pid"])
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=60) == 137  # the launcher reports the killed worker: 128 + SIGKILL
    finally:
        for pid in pool:  # the killed worker's pool child, orphaned
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_naming_a_gpu_the_host_lacks_fails_with_what_it_has(stack):
    env = {**stack.env, **with_smi(stack, [fake_nvidia_smi.gpu(0, "NVIDIA H100 80GB HBM3")])}
    result = subprocess.run([sys.executable, "manage.py", "gpu_workers", "--gpu", "3", "--dry-run"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "no GPU 3 on this host; nvidia-smi lists: 0 (NVIDIA H100 80GB HBM3)" in result.stderr
    result = subprocess.run([sys.executable, "manage.py", "gpu_workers", "--exec"], cwd=ROOT,
                            env={**env, **with_smi(stack, [fake_nvidia_smi.gpu(0, "A"), fake_nvidia_smi.gpu(1, "A")])},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "--exec needs exactly one worker, not 2" in result.stderr
