"""`manage.py gpu_workers` (and `make worker`): one Celery worker per GPU of this host.

Planning is a pure function of nvidia-smi's answer (`plan_workers`), so tests can ask which commands
a given host would get. Each worker is pinned with CUDA_VISIBLE_DEVICES to its GPU's UUID (indices
follow CUDA's fastest-first order unless CUDA_DEVICE_ORDER says otherwise, UUIDs mean one device
whatever the order) and consumes its model's queue plus the generic one: `-Q gpu.h100,gpu`.

`supervise` starts the planned workers, forwards SIGINT/SIGTERM/SIGQUIT to each (Celery's warm and
cold shutdowns), and restarts nothing: under systemd each GPU has its own unit
(deploy/systemd/kernelweb-worker@.service runs `gpu_workers --gpu N --exec`) and systemd restarts it.
Plain Python, no Django: importable from anywhere.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from kernelweb.queues import GPU_QUEUE, gpu_model, gpu_queue
from worker.engine.gpu_lock import default_lock_dir

SMI_QUERY = "index,name,uuid,driver_version"


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    uuid: str
    driver: str


def parse_gpus(text: str) -> list[Gpu]:
    """Rows of `nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader`."""
    gpus = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 4 and fields[0].isdigit():
            gpus.append(Gpu(int(fields[0]), fields[1], fields[2], fields[3]))
    return gpus


def list_gpus() -> tuple[list[Gpu], str]:
    """(this host's GPUs, "") or ([], why there are none). CUDA_VISIBLE_DEVICES is ignored on purpose:
    the launcher hands out the GPUs."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return [], "nvidia-smi not found: no NVIDIA driver on this host"
    try:
        proc = subprocess.run([smi, f"--query-gpu={SMI_QUERY}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return [], f"nvidia-smi failed: {exc}"
    if proc.returncode != 0:
        return [], f"nvidia-smi failed: {(proc.stderr or proc.stdout).strip()[:300]}"
    gpus = parse_gpus(proc.stdout)
    return gpus, "" if gpus else "nvidia-smi lists no GPU"


@dataclass(frozen=True)
class WorkerPlan:
    name: str  # the Celery node name (-n); %h is the host name
    queues: tuple[str, ...]
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # set on top of the launcher's environment
    gpu: Gpu | None

    def describe(self) -> str:
        return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in self.env), *map(shlex.quote, self.argv)])


class PlanError(ValueError):
    pass


def plan_workers(gpus: Sequence[Gpu], *, only: Sequence[int] = (), python: str = sys.executable,
                 concurrency: int = 1, loglevel: str = "INFO", lock_dir: str = "") -> list[WorkerPlan]:
    """The workers for these GPUs (or only the GPUs indexed in `only`). No GPU: one worker on the
    generic queue, which fails runs with the no-GPU reason rather than leaving them queued."""
    if only:
        missing = sorted(set(only) - {gpu.index for gpu in gpus})
        if missing:
            listed = ", ".join(f"{g.index} ({g.name})" for g in gpus) or "none"
            raise PlanError(f"no GPU {', '.join(map(str, missing))} on this host; nvidia-smi lists: {listed}")
        gpus = [gpu for gpu in gpus if gpu.index in only]
    lock = (("KW_LOCK_DIR", lock_dir),) if lock_dir else ()

    def command(name: str, queues: tuple[str, ...]) -> tuple[str, ...]:
        return (python, "-m", "celery", "-A", "kernelweb", "worker", "-Q", ",".join(queues),
                "--concurrency", str(concurrency), "-n", name, "--loglevel", loglevel)

    if not gpus:
        queues = (GPU_QUEUE,)
        return [WorkerPlan("nogpu@%h", queues, command("nogpu@%h", queues), lock, None)]
    plans = []
    for gpu in gpus:
        model = gpu_model(gpu.name)
        queues = (gpu_queue(model), GPU_QUEUE) if model else (GPU_QUEUE,)
        name = f"gpu{gpu.index}@%h"
        env = (("CUDA_VISIBLE_DEVICES", gpu.uuid or str(gpu.index)), ("CUDA_DEVICE_ORDER", "PCI_BUS_ID"), *lock)
        plans.append(WorkerPlan(name, queues, command(name, queues), env, gpu))
    return plans


def shared_lock_dir() -> str:
    """One lock folder for every worker of the host (per-GPU flocks; see worker/engine/gpu_lock.py)."""
    return str(default_lock_dir())


FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)


def supervise(plans: Sequence[WorkerPlan], *, out: TextIO = sys.stdout, poll_s: float = 0.5) -> int:
    """Start every planned worker in its own session, pass shutdown signals on, return when all have
    exited: 0 if all exited cleanly, else the first failing exit status.

    The first SIGINT or SIGTERM becomes a SIGTERM for each worker: Celery's warm shutdown, which lets
    running tasks finish (Celery exits 1 on SIGINT, 0 on SIGTERM). A second one, or SIGQUIT, becomes
    SIGQUIT: the cold shutdown; late acks then hand the interrupted runs to another worker."""
    processes: list[tuple[WorkerPlan, subprocess.Popen]] = []
    stopping: list[int] = []

    def forward(signum, frame):
        cold = signum == signal.SIGQUIT or bool(stopping)
        stopping.append(signum)
        for plan, process in processes:
            if process.poll() is None:
                print(f"{signal.Signals(signum).name}: {'cold' if cold else 'warm'} shutdown → {plan.name} "
                      f"(pid {process.pid})", file=out, flush=True)
                process.send_signal(signal.SIGQUIT if cold else signal.SIGTERM)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        for plan in plans:
            if stopping:
                break  # asked to stop while starting: start no more
            # Own session: a Ctrl-C in the terminal reaches only this launcher, which passes it on to
            # each Celery main process (never straight to their pool children, mid-task).
            process = subprocess.Popen(plan.argv, env={**os.environ, **dict(plan.env)}, start_new_session=True)
            processes.append((plan, process))
            print(f"started {plan.name} (pid {process.pid}): {plan.describe()}", file=out, flush=True)
        status, running = 0, dict(processes)
        while running:
            time.sleep(poll_s)
            for plan, process in list(running.items()):
                code = process.poll()
                if code is None:
                    continue
                del running[plan]
                left = f"; {len(running)} still running (nothing is restarted)" if running else ""
                print(f"{plan.name} (pid {process.pid}) exited with status {code}{left}", file=out, flush=True)
                if code and not status:
                    status = code if code > 0 else 128 - code  # killed by a signal: 128 + its number
        return status
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def exec_worker(plan: WorkerPlan) -> None:
    """Become the Celery worker (systemd then supervises Celery itself)."""
    os.execve(plan.argv[0], list(plan.argv), {**os.environ, **dict(plan.env)})  # noqa: S606 - argv, no shell
