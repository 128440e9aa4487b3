"""Reads of the worker registry: who is alive, which queues have a live consumer, why a run waits.

"Alive" is decided in SQL against the database's clock (the same clock the workers stamp), so a web
host whose clock is off does not see a healthy fleet as dead. Fleets are small (a row per GPU):
each read here is one query over every worker.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import BooleanField, Count, ExpressionWrapper, Q, QuerySet
from django.db.models.functions import Now
from django.utils import timezone
from django.utils.timesince import timesince

from apps.fleet.models import Worker
from apps.runs.models import Run, RunStatus
from apps.runs.selectors import runs_visible_to
from kernelweb.queues import GPU_QUEUE, gpu_model, queue_model


def alive_window() -> timedelta:
    return timedelta(seconds=settings.WORKER_HEARTBEAT_SECONDS * settings.WORKER_DEAD_AFTER_BEATS)


def workers_with_liveness() -> QuerySet[Worker]:
    alive = Q(stopped_at__isnull=True, last_seen__gte=Now() - alive_window())
    return Worker.objects.annotate(alive=ExpressionWrapper(alive, output_field=BooleanField()))


@dataclass(frozen=True)
class WorkerRow:
    worker: Worker
    alive: bool
    current_run: Run | None  # None when idle, or when the viewer may not see the run
    busy: bool  # has a run, visible or not
    runs_24h: int = 0  # runs this worker claimed in the last 24 hours (Run.worker_name), visible or not

    @property
    def gpu_label(self) -> str:
        return self.worker.gpu_name or "no GPU"


def worker_rows(user) -> list[WorkerRow]:
    """Every registered worker, live ones first; a current run only if `user` may see it."""
    workers = sorted(workers_with_liveness(), key=lambda w: (not w.alive, w.host, w.gpu_index is None,
                                                              w.gpu_index or 0, w.name))
    run_ids = {w.current_run_id for w in workers if w.current_run_id}
    visible = {run.pk: run for run in runs_visible_to(user).filter(pk__in=run_ids)} if run_ids else {}
    since = timezone.now() - timedelta(hours=24)
    served = dict(Run.objects.filter(worker_name__in=[w.name for w in workers], started_at__gte=since)
                  .values("worker_name").annotate(n=Count("pk")).values_list("worker_name", "n"))
    return [WorkerRow(worker=w, alive=bool(w.alive), current_run=visible.get(w.current_run_id),
                      busy=bool(w.alive and w.current_run_id), runs_24h=served.get(w.name, 0)) for w in workers]


@dataclass(frozen=True)
class QueueState:
    queue: str
    live: int  # workers alive now that consume it
    last_seen: datetime | None  # the latest heartbeat of any worker that ever consumed it
    last_worker: str
    gpu_names: tuple[str, ...]


def queue_states() -> dict[str, QueueState]:
    found: dict[str, dict] = {}
    for w in workers_with_liveness().order_by("last_seen"):
        for queue in w.queues:
            state = found.setdefault(queue, {"live": 0, "gpu_names": set()})
            state["live"] += bool(w.alive)
            state["last_seen"], state["last_worker"] = w.last_seen, w.name  # ascending: the latest wins
            if w.gpu_name:
                state["gpu_names"].add(w.gpu_name)
    return {q: QueueState(q, s["live"], s["last_seen"], s["last_worker"], tuple(sorted(s["gpu_names"])))
            for q, s in found.items()}


def wait_reason(queue: str, states: dict[str, QueueState]) -> str:
    """Why a message on `queue` is not being picked up: "" while a live worker consumes it."""
    state = states.get(queue)
    if state is not None and state.live:
        return ""
    if state is None:
        seen = "no worker has consumed it yet"
    else:
        seen = f"last seen {timesince(state.last_seen)} ago: {state.last_worker}"
    return f"waiting: no live worker for queue {queue} ({seen})"


def run_queue(run: Run) -> str:
    return run.queue or settings.KERNELWEB_GPU_QUEUE  # runs from before targeting went to the default


UNSENT = "waiting: not yet sent, the job queue was unreachable; it is sent automatically when the queue is back"


def run_wait_status(run: Run) -> str:
    """The run header's status line for a queued run nobody can take (or not yet sent); "" otherwise."""
    if run.status != RunStatus.QUEUED:
        return ""
    if run.dispatch_pending:
        return UNSENT
    return wait_reason(run_queue(run), queue_states())


def attach_wait_status(runs: Iterable[Run]) -> None:
    """Set `wait_status` on each run of a listing (one query, and only when a queued run is shown)."""
    runs = list(runs)
    queued = [run for run in runs if run.status == RunStatus.QUEUED]
    states = queue_states() if queued else {}
    for run in runs:
        run.wait_status = ("" if run.status != RunStatus.QUEUED else UNSENT if run.dispatch_pending
                           else wait_reason(run_queue(run), states))


@dataclass(frozen=True)
class GpuTarget:
    value: str  # what the launch form posts: "" for the default queue
    queue: str
    label: str
    live: int


def gpu_targets() -> list[GpuTarget]:
    """The launch form's GPU choices: the default queue (any GPU), then each GPU model that a worker
    has ever consumed for, those with live workers first."""
    states = queue_states()
    default = settings.KERNELWEB_GPU_QUEUE
    state = states.get(default)
    title = "Any GPU" if default == GPU_QUEUE else f"Default ({default})"
    targets = [GpuTarget("", default, _label(title, state), state.live if state else 0)]
    for queue, state in sorted(states.items(), key=lambda item: (not item[1].live, item[0])):
        model = queue_model(queue)
        if model:
            names = ", ".join(state.gpu_names) or model.upper()
            targets.append(GpuTarget(queue, queue, _label(f"{model.upper()} ({names})", state), state.live))
    return targets


def _label(title: str, state: QueueState | None) -> str:
    if state is not None and state.live:
        return f"{title} · {state.live} live worker{'s' if state.live != 1 else ''}"
    if state is None:
        return f"{title} · no live worker"
    return f"{title} · no live worker, last seen {timesince(state.last_seen)} ago"


def target_queue(value: str) -> str:
    """The queue a launch's GPU target names: "" or "any" → the default (GPU_QUEUE setting); "gpu" → any
    GPU worker; "gpu.h100", "h100", "H100" or a GPU name ("NVIDIA H100 80GB HBM3") → "gpu.h100";
    "" when nothing usable is left."""
    value = (value or "").strip()
    if value.lower() in ("", "any"):
        return settings.KERNELWEB_GPU_QUEUE
    if value.lower() == GPU_QUEUE:
        return GPU_QUEUE
    lowered = value.lower()
    model = gpu_model(queue_model(lowered) if lowered.startswith(GPU_QUEUE + ".") else value)
    return f"{GPU_QUEUE}.{model}" if model else ""
