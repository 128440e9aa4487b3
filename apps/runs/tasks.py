"""Celery entry points on a GPU worker: thin, take ids, delegate. The web side never imports this
module; it sends these tasks by name (apps/runs/dispatch.py)."""

from celery import Task, shared_task

from apps.runs.dispatch import EVALUATE_MANUAL_TURN, EXECUTE_RUN
from apps.runs.execution import manual_turn_evaluate, run_execute, turn_verify
from apps.runs.selectors import run_queue_of, turn_queue_of
from apps.runs.verification import VERIFY_TURN


class RunQueueTask(Task):
    """Sent to the run's own queue (Run.queue: `gpu`, or `gpu.h100` for runs that asked for an H100)
    unless the caller names one (apps/runs/dispatch.py always does). Read from the row at send time,
    which is after commit."""

    queue_of = None  # staticmethod(id -> queue name), set per task below

    def apply_async(self, args=None, kwargs=None, **options):
        if "queue" not in options and args:
            options["queue"] = self.queue_of(args[0])
        return super().apply_async(args, kwargs, **options)


@shared_task(base=RunQueueTask, name=EXECUTE_RUN, acks_late=True, queue_of=staticmethod(run_queue_of))
def execute_run(run_id: int) -> None:
    run_execute(run_id)


@shared_task(base=RunQueueTask, name=EVALUATE_MANUAL_TURN, acks_late=True, queue_of=staticmethod(turn_queue_of))
def evaluate_manual_turn(turn_id: int) -> None:
    manual_turn_evaluate(turn_id)


@shared_task(name="runs.reconcile", ignore_result=True)
def reconcile_runs() -> str:
    """Celery beat's periodic pass of the delivery reconciler (apps/runs/reconcile.py)."""
    from apps.runs.reconcile import reconcile

    return str(reconcile())


@shared_task(name=VERIFY_TURN, acks_late=True)
def verify_turn(verification_id: int) -> None:
    """Sent to the run's GPU queue by apps/runs/verification.py (always with a queue)."""
    turn_verify(verification_id)


@shared_task(name="runs.verify_published", ignore_result=True)
def verify_published() -> str:
    """Celery beat's periodic pass: ask for verifications of published turns (apps/runs/verification.py)."""
    from apps.runs.verification import verify_published as one_pass

    return str(one_pass())
