"""Celery entry points: thin, take ids, delegate to services."""

from celery import shared_task

from apps.runs.execution import run_execute
from apps.runs.manual import manual_turn_evaluate


@shared_task(name="runs.execute_run", acks_late=True)
def execute_run(run_id: int) -> None:
    run_execute(run_id)


@shared_task(name="runs.evaluate_manual_turn", acks_late=True)
def evaluate_manual_turn(turn_id: int) -> None:
    manual_turn_evaluate(turn_id)
