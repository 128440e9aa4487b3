from django.db import models


class Worker(models.Model):
    """A Celery GPU worker process, as it last reported itself (apps/fleet/heartbeat.py).

    One row per Celery node name (`gpu0@host`), kept across restarts. Times are the database's
    clock (`Now()`), written by the worker and compared by the web side, so hosts with skewed
    clocks still agree on who is alive.
    """

    name = models.CharField(max_length=200, unique=True, help_text="Celery node name, e.g. gpu0@host.")
    host = models.CharField(max_length=200)
    pid = models.PositiveIntegerField(default=0)
    gpu_index = models.PositiveSmallIntegerField(null=True, blank=True, help_text="As nvidia-smi numbers it.")
    gpu_name = models.CharField(max_length=200, blank=True, help_text="Empty: no GPU visible to the worker.")
    gpu_uuid = models.CharField(max_length=100, blank=True)
    driver = models.CharField(max_length=50, blank=True)
    nvcc_version = models.CharField(max_length=50, blank=True)
    queues = models.JSONField(default=list, help_text="Queues the worker consumes.")
    concurrency = models.PositiveSmallIntegerField(default=1)
    current_run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField(db_index=True)
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="Set by a clean shutdown.")

    class Meta:
        ordering = ["host", "gpu_index", "name"]

    def __str__(self) -> str:
        return self.name
