"""How the web side hands work to a GPU worker: by Celery task name, to the run's queue.

The web process never imports the worker's task bodies (apps/runs/tasks.py and what it pulls in);
it names the task. Where the task is registered in this process (a worker, or eager mode in tests)
the signature runs through it; elsewhere it is sent to the broker as is.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.db.models import F
from django.db.models.functions import Now

from apps.runs.models import Run, Turn
from apps.runs.selectors import run_queue_of, turn_queue_of

logger = logging.getLogger(__name__)

EXECUTE_RUN = "runs.execute_run"
EVALUATE_MANUAL_TURN = "runs.evaluate_manual_turn"


def _send(task_name: str, object_id: int, queue: str) -> None:
    current_app.signature(task_name, args=(object_id,), options={"queue": queue}).apply_async()


def enqueue_run(run_id: int) -> None:
    """Queue the run's pipeline on its GPU queue (call after the run's row is committed)."""
    _send(EXECUTE_RUN, run_id, run_queue_of(run_id))


def run_dispatch(run_id: int) -> bool:
    """Send the run's message and record it in the run's outbox fields; False when the broker refused
    (unreachable, timed out): the run stays `dispatch_pending` and the reconciler sends it later
    (apps/runs/reconcile.py). Never raises for a broker failure, so a launch can answer 503 instead
    of a 500 page. A send whose record is lost (database gone right after) is sent again by the
    reconciler; the worker's claim drops the duplicate (apps/runs/jobs.py)."""
    try:
        enqueue_run(run_id)
    except Exception as exc:  # noqa: BLE001 - kombu/redis/OS errors alike: the outbox keeps the run
        logger.warning("run %s not sent, the broker is unreachable (%s: %s); the reconciler will send it",
                       run_id, type(exc).__name__, exc)
        Run.objects.filter(pk=run_id).update(dispatch_pending=True, dispatched_at=Now())
        return False
    Run.objects.filter(pk=run_id).update(dispatch_pending=False, dispatched_at=Now(),
                                         dispatch_attempts=F("dispatch_attempts") + 1)
    return True


def enqueue_manual_turn(turn_id: int) -> None:
    """Queue the evaluation of a manual turn on its run's GPU queue (call after the turn is committed)."""
    _send(EVALUATE_MANUAL_TURN, turn_id, turn_queue_of(turn_id))


def turn_dispatch(turn_id: int) -> bool:
    """As `run_dispatch`, for a manual turn's evaluation: False when the broker refused; the turn stays
    `dispatch_pending` and the reconciler sends it. Only never-sent turns are sent again (the evaluation
    of a turn on a finished run is not idempotent the way a run's claim is)."""
    try:
        enqueue_manual_turn(turn_id)
    except Exception as exc:  # noqa: BLE001 - as in run_dispatch
        logger.warning("manual turn %s not sent, the broker is unreachable (%s: %s); the reconciler will send it",
                       turn_id, type(exc).__name__, exc)
        Turn.objects.filter(pk=turn_id).update(dispatch_pending=True)
        return False
    Turn.objects.filter(pk=turn_id).update(dispatch_pending=False)
    return True
