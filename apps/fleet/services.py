"""Writes to the worker registry. Called from Celery worker processes (apps/fleet/heartbeat.py);
every write stamps the database's clock, never the worker host's."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models.functions import Now

from apps.fleet.models import Worker
from apps.runs.models import RunStatus


@dataclass(frozen=True)
class WorkerFacts:
    """What a worker says about itself when it starts."""

    name: str
    host: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int = 1
    gpu_index: int | None = None
    gpu_name: str = ""  # empty: no GPU visible to this worker
    gpu_uuid: str = ""
    driver: str = ""
    nvcc_version: str = ""


def worker_register(facts: WorkerFacts) -> Worker:
    """Insert or refresh this worker's row: a restart under the same node name starts a new life."""
    worker, _ = Worker.objects.update_or_create(name=facts.name, defaults={
        "host": facts.host, "pid": facts.pid, "queues": list(facts.queues), "concurrency": facts.concurrency,
        "gpu_index": facts.gpu_index, "gpu_name": facts.gpu_name, "gpu_uuid": facts.gpu_uuid,
        "driver": facts.driver, "nvcc_version": facts.nvcc_version, "current_run": None,
        "started_at": Now(), "last_seen": Now(), "stopped_at": None,
    })
    return worker


def worker_beat(name: str, queues: tuple[str, ...]) -> bool:
    """Mark the worker alive now (and its queues, which `celery control add_consumer` may change).
    False when its row is gone (deleted in the admin): the caller registers again."""
    found = Worker.objects.filter(name=name).update(last_seen=Now(), queues=list(queues), stopped_at=None) == 1
    # A pool child killed mid-run never reports the end of its run: forget a run that has ended since.
    Worker.objects.filter(name=name, current_run__status__in=RunStatus.terminal()).update(current_run=None)
    return found


def worker_stopped(name: str) -> None:
    """A clean shutdown: dead at once, instead of after the missed heartbeats."""
    Worker.objects.filter(name=name).update(stopped_at=Now(), current_run=None)


def worker_run_started(name: str, run_id: int) -> None:
    Worker.objects.filter(name=name).update(current_run_id=run_id)


def worker_run_finished(name: str, run_id: int) -> None:
    # Only its own run: with concurrency > 1 another run may have become the current one since.
    Worker.objects.filter(name=name, current_run_id=run_id).update(current_run=None)
