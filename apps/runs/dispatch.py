"""How the web side hands work to a GPU worker: by Celery task name, to the run's queue.

The web process never imports the worker's task bodies (apps/runs/tasks.py and what it pulls in);
it names the task. Where the task is registered in this process (a worker, or eager mode in tests)
the signature runs through it; elsewhere it is sent to the broker as is.
"""

from __future__ import annotations

from celery import current_app

from apps.runs.selectors import run_queue_of, turn_queue_of

EXECUTE_RUN = "runs.execute_run"
EVALUATE_MANUAL_TURN = "runs.evaluate_manual_turn"


def _send(task_name: str, object_id: int, queue: str) -> None:
    current_app.signature(task_name, args=(object_id,), options={"queue": queue}).apply_async()


def enqueue_run(run_id: int) -> None:
    """Queue the run's pipeline on its GPU queue (call after the run's row is committed)."""
    _send(EXECUTE_RUN, run_id, run_queue_of(run_id))


def enqueue_manual_turn(turn_id: int) -> None:
    """Queue the evaluation of a manual turn on its run's GPU queue (call after the turn is committed)."""
    _send(EVALUATE_MANUAL_TURN, turn_id, turn_queue_of(turn_id))
