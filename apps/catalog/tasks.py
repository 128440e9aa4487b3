"""Celery entry points of the catalog: thin, take ids, delegate to services."""

from celery import Task, shared_task
from django.conf import settings

from apps.catalog.services import task_validate_baseline


class GpuQueueTask(Task):
    """Sent to the GPU queue (settings.KERNELWEB_GPU_QUEUE) unless the caller names another queue.

    Celery deprecates the `queue` task attribute, and the route belongs with the task rather than in
    settings, so `.delay()` / `.apply_async()` fill it in here.
    """

    def apply_async(self, args=None, kwargs=None, **options):
        options.setdefault("queue", settings.KERNELWEB_GPU_QUEUE)
        return super().apply_async(args, kwargs, **options)


@shared_task(base=GpuQueueTask, name="catalog.validate_task_baseline", acks_late=True)
def validate_task_baseline(task_id: int) -> None:
    """Baseline vs CPU reference: needs nvcc and a GPU, hence the GPU queue."""
    task_validate_baseline(task_id)
