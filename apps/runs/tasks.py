"""Celery entry points: thin, take ids, delegate to services."""

from celery import Task, shared_task

from apps.runs.execution import run_execute
from apps.runs.manual import manual_turn_evaluate
from apps.runs.selectors import run_queue_of, turn_queue_of


class RunQueueTask(Task):
    """Sent to the run's own queue (Run.queue: `gpu`, or `gpu.h100` for runs that asked for an H100)
    unless the caller names one. Read from the row at send time, which is after commit, so the
    callers keep the plain `.delay(id)`."""

    queue_of = None  # staticmethod(id -> queue name), set per task below

    def apply_async(self, args=None, kwargs=None, **options):
        if "queue" not in options and args:
            options["queue"] = self.queue_of(args[0])
        return super().apply_async(args, kwargs, **options)


@shared_task(base=RunQueueTask, name="runs.execute_run", acks_late=True, queue_of=staticmethod(run_queue_of))
def execute_run(run_id: int) -> None:
    run_execute(run_id)


@shared_task(base=RunQueueTask, name="runs.evaluate_manual_turn", acks_late=True,
             queue_of=staticmethod(turn_queue_of))
def evaluate_manual_turn(turn_id: int) -> None:
    manual_turn_evaluate(turn_id)
