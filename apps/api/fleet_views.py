"""GET /api/workers/: the worker registry, as the Workers page shows it (apps.fleet.selectors)."""

from rest_framework import generics, serializers

from apps.fleet.selectors import worker_rows
from kernelweb.queues import gpu_model


class WorkerSerializer(serializers.Serializer):
    name = serializers.CharField(source="worker.name", help_text="Celery node name, e.g. gpu0@host.")
    host = serializers.CharField(source="worker.host")
    state = serializers.SerializerMethodField(help_text="alive, dead (missed heartbeats) or stopped (clean exit).")
    alive = serializers.BooleanField()
    gpu_index = serializers.IntegerField(source="worker.gpu_index", allow_null=True)
    gpu_name = serializers.CharField(source="worker.gpu_name", help_text="Empty: no GPU on that worker.")
    gpu_model = serializers.SerializerMethodField(help_text="As in queue names: h100 for gpu.h100.")
    gpu_uuid = serializers.CharField(source="worker.gpu_uuid")
    driver = serializers.CharField(source="worker.driver")
    nvcc_version = serializers.CharField(source="worker.nvcc_version")
    queues = serializers.ListField(source="worker.queues", child=serializers.CharField())
    concurrency = serializers.IntegerField(source="worker.concurrency")
    current_run = serializers.SerializerMethodField(help_text="Run id, if you may see that run.")
    busy = serializers.BooleanField(help_text="Running something, whether or not you may see it.")
    started_at = serializers.DateTimeField(source="worker.started_at")
    last_seen = serializers.DateTimeField(source="worker.last_seen")

    def get_state(self, row) -> str:
        return "alive" if row.alive else "stopped" if row.worker.stopped_at else "dead"

    def get_gpu_model(self, row) -> str:
        return gpu_model(row.worker.gpu_name)

    def get_current_run(self, row) -> int | None:
        return row.current_run.pk if row.current_run else None


class WorkerList(generics.ListAPIView):
    """GPU workers, live ones first: host, GPU, driver, queues, current run, last heartbeat."""

    serializer_class = WorkerSerializer

    def get_queryset(self):
        return worker_rows(self.request.user)
