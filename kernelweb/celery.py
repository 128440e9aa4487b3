import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelweb.settings")

app = Celery("kernelweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _schedule(sender, **kwargs) -> None:
    """Celery beat (a worker with -B, or `celery beat`; run exactly one): the delivery reconciler
    (apps/runs/reconcile.py) and the verification of published turns (apps/runs/verification.py), both
    on the web-side housekeeping queue."""
    from django.conf import settings

    from kernelweb.queues import DEFAULT_QUEUE

    sender.conf.beat_schedule = {
        "reconcile-runs": {"task": "runs.reconcile", "schedule": settings.RECONCILE_INTERVAL_SECONDS,
                           "options": {"queue": DEFAULT_QUEUE, "expires": settings.RECONCILE_INTERVAL_SECONDS}},
        "verify-published": {"task": "runs.verify_published", "schedule": settings.VERIFY_INTERVAL_SECONDS,
                             "options": {"queue": DEFAULT_QUEUE, "expires": settings.VERIFY_INTERVAL_SECONDS}},
    }
