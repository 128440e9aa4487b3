"""Fair share of the GPUs between users when the queue is long (worker side).

Quotas (apps/runs/quotas.py) bound how much one user may have queued; this bounds how many of the GPUs
one user holds while others wait. When a worker receives a run whose owner already has
FAIR_SHARE_RUNNING_PER_USER runs running, and a run of another user who is under that share waits on
the same queue, the worker does not start it: it sends the run's message again with a countdown of
FAIR_SHARE_DEFER_SECONDS and takes the next message, which comes from the queue's head, so the other
users' runs start first. When nobody else waits, nothing is deferred: a lone user may use every GPU.

The run stays `queued` in the database throughout (the re-sent message is the same task for the same
run; the claim stays the idempotency guard). The share is checked without a lock, so two workers
claiming at the same instant may put one user one run over K; the next deferral evens it out.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings
from django.db.models import Count

from apps.runs.dispatch import EXECUTE_RUN
from apps.runs.models import Run, RunStatus

logger = logging.getLogger(__name__)


def owners_at_share(share: int):
    """Owners with at least `share` runs running (a subquery)."""
    return (Run.objects.filter(status=RunStatus.RUNNING).values("owner_id")
            .annotate(running=Count("id")).filter(running__gte=share).values("owner_id"))


def fair_share_should_wait(run_id: int) -> bool:
    """Whether this queued run should wait for other users' runs on its queue to start first."""
    share = settings.FAIR_SHARE_RUNNING_PER_USER
    if not share:
        return False
    run = Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).values("owner_id", "queue").first()
    if run is None:  # running (a redelivery), finished or gone: the claim decides
        return False
    if Run.objects.filter(owner_id=run["owner_id"], status=RunStatus.RUNNING).count() < share:
        return False
    others = (Run.objects.filter(status=RunStatus.QUEUED, queue=run["queue"]).exclude(owner_id=run["owner_id"])
              .exclude(owner_id__in=owners_at_share(share)))
    return others.exists()


def defer_run(run_id: int) -> None:
    """Send the run's message again, to its queue, after FAIR_SHARE_DEFER_SECONDS."""
    queue = Run.objects.filter(pk=run_id).values_list("queue", flat=True).first() or settings.KERNELWEB_GPU_QUEUE
    current_app.signature(EXECUTE_RUN, args=(run_id,),
                          options={"queue": queue, "countdown": settings.FAIR_SHARE_DEFER_SECONDS}).apply_async()


def fair_share_defer(run_id: int) -> bool:
    """Called by the worker before it claims a run: defer it (and return True) if its owner is over their
    share while others wait. Never in eager mode, where the re-sent task would run at once, recursively."""
    if settings.CELERY_TASK_ALWAYS_EAGER or not fair_share_should_wait(run_id):
        return False
    logger.info("run %s deferred: its owner has %s or more runs running and other users' runs wait",
                run_id, settings.FAIR_SHARE_RUNNING_PER_USER)
    defer_run(run_id)
    return True
