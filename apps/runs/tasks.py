"""Celery entry points: thin, take ids, delegate to services."""

from celery import shared_task

from apps.runs.execution import run_execute


@shared_task(name="runs.execute_run", acks_late=True)
def execute_run(run_id: int) -> None:
    run_execute(run_id)
