"""The delivery reconciler: no run is lost between the database and the queue, or with its worker.

Run periodically by Celery beat (`runs.reconcile`, kernelweb/celery.py) and by `manage.py reconcile_runs`
for deployments without beat. Each pass, against the database's clock:

1. **Unsent** (`dispatch_pending`, older than RUN_DISPATCH_GRACE_SECONDS): the send after commit failed
   (broker unreachable at launch) or never happened (process died): sent now.
2. **Stuck queued** (sent more than RUN_REDISPATCH_AFTER_SECONDS ago, still queued, while a live worker
   of its queue is idle): its message is gone (a broker restarted without persistence; Redis cannot be
   inspected reliably for it): sent again, up to RUN_MAX_DISPATCHES messages, then failed with the
   reason. A run whose queue has no live (or no idle) worker is waiting, not stuck: left alone.
3. **Worker lost** (running, and no live worker either holds it or has been up on its host since
   before it started): failed with "worker lost: <worker> stopped sending heartbeats at <time>". The
   run is not resumed: its pipeline state lived in the dead process; the user launches it again.

Every change is a conditional UPDATE, so two reconcilers (two beats by mistake) never both act on
one run; a duplicate message, should one slip through, is dropped by the worker's claim (jobs.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db.models.functions import Coalesce, Now

from apps.fleet.models import Worker
from apps.fleet.selectors import alive_window, workers_with_liveness
from apps.runs.dispatch import run_dispatch, turn_dispatch
from apps.runs.models import Run, RunStatus, Turn
from apps.runs.selectors import run_queue_of
from apps.runs.services import run_fail

logger = logging.getLogger(__name__)


@dataclass
class Report:
    sent: list[int] = field(default_factory=list)  # unsent runs now sent
    turns_sent: list[int] = field(default_factory=list)  # unsent manual turns now sent
    resent: list[int] = field(default_factory=list)  # stuck queued runs sent again
    unsent: list[int] = field(default_factory=list)  # runs and manual turns still unsent: the broker refused again
    failed_stuck: list[int] = field(default_factory=list)
    failed_lost: list[int] = field(default_factory=list)

    def __str__(self) -> str:
        return (f"sent {len(self.sent)}, manual turns sent {len(self.turns_sent)}, re-sent {len(self.resent)}, "
                f"still unsent {len(self.unsent)}, "
                f"failed as stuck {len(self.failed_stuck)}, failed as worker lost {len(self.failed_lost)}")


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def _send(taken, report_ok: list, report: Report) -> None:
    """Take the send with a conditional update (`taken` repeats the age condition, so of two reconcilers
    only one matches), then send."""
    run_id = taken.values_list("pk", flat=True).first()
    if run_id is None or taken.filter(pk=run_id).update(dispatch_pending=True, dispatched_at=Now()) != 1:
        return
    (report_ok if run_dispatch(run_id) else report.unsent).append(run_id)


def _idle_queues() -> set[str]:
    """Queues with a live worker that holds no run now."""
    idle: set[str] = set()
    for worker in workers_with_liveness().filter(alive=True, current_run__isnull=True):
        idle.update(worker.queues)
    return idle


def _stuck_error(run: Run, queue: str) -> str:
    return (f"no worker took this run: it was sent to queue {queue} {run.dispatch_attempts} times while a "
            f"worker of that queue was idle, so its messages were lost (a broker restarted without "
            f"persistence?). Launch the run again; check the broker's persistence (Redis appendonly) and "
            f"the workers' logs.")


def _lost_error(worker: Worker) -> str:
    if worker.stopped_at is not None:
        how = f"shut down at {worker.stopped_at:%Y-%m-%d %H:%M:%S} UTC"
    else:
        how = f"stopped sending heartbeats at {worker.last_seen:%Y-%m-%d %H:%M:%S} UTC"
    return (f"worker lost: {worker.name} on {worker.host} {how} while running this run; "
            "its progress up to then is kept, launch the run again to finish it")


def _lost_worker(run: Run, workers: list[Worker]) -> Worker | None:
    """The dead worker that ran `run`, or None while it may still be running (or nothing says who ran it)."""
    if any(w.alive and w.current_run_id == run.pk for w in workers):
        return None
    holding = [w for w in workers if not w.alive and w.current_run_id == run.pk]
    if holding:
        return holding[0]  # the worker that said it runs it is dead
    # Nobody says it runs it (the record is informational and may have been missed): judge by its host.
    on_host = [w for w in workers if w.host == run.worker_host]
    slack = alive_window()  # a worker registers in a thread beside its first task: allow the window
    if any(w.alive and run.started_at and w.started_at <= run.started_at + slack for w in on_host):
        return None  # a worker up since before the run is alive on its host: may be the one running it
    dead = sorted((w for w in on_host if not w.alive), key=lambda w: w.last_seen, reverse=True)
    return dead[0] if dead else None


def reconcile() -> Report:
    report = Report()
    # 1. Unsent: the outbox.
    grace = Now() - _seconds(settings.RUN_DISPATCH_GRACE_SECONDS)
    unsent = (Run.objects.filter(status=RunStatus.QUEUED, dispatch_pending=True)
              .annotate(last_try=Coalesce("dispatched_at", "created_at")).filter(last_try__lt=grace))
    for run_id in list(unsent.order_by("created_at").values_list("pk", flat=True)):
        _send(unsent.filter(pk=run_id), report.sent, report)

    # 1b. Unsent manual turns (their runs are `origin="manual"` or already ran: not in the run outbox).
    unsent_turns = Turn.objects.filter(dispatch_pending=True, created_at__lt=grace)
    for turn_id in list(unsent_turns.order_by("created_at").values_list("pk", flat=True)):
        # Taken by clearing the flag first (one reconciler wins); a refused send sets it again.
        if unsent_turns.filter(pk=turn_id).update(dispatch_pending=False) == 1:
            (report.turns_sent if turn_dispatch(turn_id) else report.unsent).append(turn_id)

    # 2. Stuck queued: sent, but nobody took it while a worker of its queue was idle.
    cutoff = Now() - _seconds(settings.RUN_REDISPATCH_AFTER_SECONDS)
    stale = Run.objects.filter(status=RunStatus.QUEUED, dispatch_pending=False, dispatch_attempts__gt=0,
                               dispatched_at__lt=cutoff)
    stuck = list(stale.order_by("created_at"))
    idle = _idle_queues() if stuck else set()
    for run in stuck:
        queue = run_queue_of(run.pk)
        if queue not in idle:
            continue  # waiting for a worker, not lost
        if run.dispatch_attempts >= settings.RUN_MAX_DISPATCHES:
            if stale.filter(pk=run.pk).exists() and run_fail(run.pk, _stuck_error(run, queue)):
                report.failed_stuck.append(run.pk)
            continue
        _send(stale.filter(pk=run.pk), report.resent, report)

    # 3. Worker lost: running, and its worker stopped beating.
    started_before = Now() - alive_window()
    running = list(Run.objects.filter(status=RunStatus.RUNNING, started_at__lt=started_before))
    if running:
        workers = list(workers_with_liveness())
        for run in running:
            worker = _lost_worker(run, workers)
            if worker is not None and Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING,
                                                         attempts=run.attempts).exists() \
                    and run_fail(run.pk, _lost_error(worker)):
                report.failed_lost.append(run.pk)
    if report.sent or report.turns_sent or report.resent or report.unsent or report.failed_stuck or report.failed_lost:
        logger.warning("reconcile: %s (runs: sent %s, re-sent %s, unsent %s, stuck %s, lost %s)", report,
                       *(ids[:20] for ids in (report.sent, report.resent, report.unsent, report.failed_stuck,
                                              report.failed_lost)))
    return report

