"""How every GPU job starts on a worker, a run's pipeline and a manual turn's evaluation alike.

`job_start` claims the run (or reclaims it after a worker loss; a manual turn on an existing run
claims nothing), checks for a GPU, loads the task and checks that the task folder is still the
revision the run was launched with. `job_guard` wraps the work itself: the worker's time limit and
any crash end the run (or the turn) as failed with a readable error; what was stored stays stored.

Each failure is recorded through a `fail(message, verdict)` callback: by default the run fails; a
manual turn on a finished run marks only that turn (with the verdict: no_gpu, spec_error,
task_changed, timeout or error).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celery import current_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from apps.runs.events import event_append
from apps.runs.models import Run, RunStatus
from apps.runs.services import DuplicateDelivery, run_claim, run_fail, run_reclaim
from worker.engine import toolchain
from worker.engine.revision import short_revision, task_revision
from worker.engine.taskspec import SpecError
from worker.registry import load_task

logger = logging.getLogger(__name__)

Fail = Callable[[str, str], Any]


@dataclass(frozen=True)
class Job:
    run: Run
    spec: Any  # the format's spec (worker.registry.AnySpec)
    chain: toolchain.Toolchain
    host: str

    @property
    def gpu(self):
        return self.chain.gpu


def _run_fail(run_id: int) -> Fail:
    return lambda message, verdict: run_fail(run_id, message)


def _message_id() -> str:
    """The id of the Celery message being executed ("" outside a task)."""
    request = getattr(current_task, "request", None)
    return str(getattr(request, "id", "") or "")


def _node_name() -> str:
    """The Celery node name of this worker (e.g. gpu1@host; "" outside a task)."""
    request = getattr(current_task, "request", None)
    return str(getattr(request, "hostname", "") or "")


def _claim(run_id: int, host: str, gpu) -> bool:
    """Idempotent: of several messages for one run (a redelivery, or a re-send by the reconciler,
    apps/runs/reconcile.py), the first claims it; a redelivery of that same message takes it over
    (its worker was lost); any other message finds it taken or finished and does nothing. The run records
    which worker and which GPU (nvidia-smi index and UUID) took it, so a multi-GPU host's pinning can be
    checked per run."""
    message = _message_id()
    gpu_name = gpu.name if gpu else ""
    where = {"worker_name": _node_name(), "gpu_index": gpu.index if gpu else None,
             "gpu_uuid": gpu.uuid if gpu else ""}
    if run_claim(run_id, worker_host=host, gpu_name=gpu_name, message=message, **where):
        return True
    status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
    if status == RunStatus.RUNNING:
        try:
            if run_reclaim(run_id, worker_host=host, gpu_name=gpu_name, message=message, **where):
                return True  # redelivered after its worker was lost
        except DuplicateDelivery as exc:
            logger.info("%s; dropped", exc)
            return False
    logger.info("run %s is %s; nothing to do", run_id, status or "gone")
    return False


def task_folder(run: Run) -> Path:
    path = Path(settings.TASKS_DIR) / run.task.spec_path
    return path.parent if path.suffix else path


def revision_mismatch(run: Run, folder: Path) -> str:
    """The message a run fails with when its task folder is no longer the revision it was launched with;
    "" when it is, or when the run recorded none (runs from before revisions were kept)."""
    if not run.task_revision:
        return ""
    now = task_revision(folder)
    if now == run.task_revision:
        return ""
    return (f"the task changed since this run was launched: launched with revision "
            f"{short_revision(run.task_revision)}…, the folder now is {short_revision(now)}…; launch a new run")


def job_start(run_id: int, *, claim: bool = True, fail: Fail | None = None) -> Job | None:
    """Everything before the work itself; None when there is nothing to do (not ours, or a failure
    already recorded through `fail`)."""
    fail = fail or _run_fail(run_id)
    chain = toolchain.detect()
    gpu = chain.gpu
    host = socket.gethostname()
    if claim:
        if not _claim(run_id, host, gpu):
            return None
        event_append(run_id, "worker.info", {"host": host, "node": _node_name(), "gpu": gpu.name if gpu else None,
                                             "gpu_index": gpu.index if gpu else None,
                                             "gpu_uuid": gpu.uuid if gpu else "", **chain.describe()})
    if gpu is None:
        fail(f"No NVIDIA GPU on worker host {host} ({chain.gpu_reason}): runs need one to time and profile "
             "kernels. Start a Celery worker on a GPU host (README.md, 'Deployment', step 4: GPU hosts) and launch "
             "the run again.",
             "no_gpu")
        return None
    run = Run.objects.select_related("task", "endpoint").get(pk=run_id)
    folder = task_folder(run)
    try:
        spec = load_task(Path(settings.TASKS_DIR) / run.task.spec_path)
        mismatch = revision_mismatch(run, folder)
    except (SpecError, OSError) as exc:
        fail(f"the task's spec cannot be read: {exc}", "spec_error")
        return None
    if mismatch:
        fail(mismatch, "task_changed")
        return None
    return Job(run=run, spec=spec, chain=chain, host=host)


@contextmanager
def job_guard(run_id: int, what: str, fail: Fail | None = None) -> Iterator[None]:
    """Run the work; the worker's time limit or a crash is recorded through `fail` instead of leaving
    the run "running"."""
    fail = fail or _run_fail(run_id)
    try:
        yield
    except SoftTimeLimitExceeded:
        fail(f"the {what} exceeded the worker's time limit of {settings.CELERY_TASK_SOFT_TIME_LIMIT} s "
             "(RUN_SOFT_TIME_LIMIT); lower the rounds or set a time budget and launch again", "timeout")
    except Exception as exc:  # noqa: BLE001 - record any crash instead of leaving the job "running"
        logger.exception("%s of run %s crashed", what, run_id)
        fail(f"internal error in the {what}: {type(exc).__name__}: {exc}", "error")
