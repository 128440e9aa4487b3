from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "apps.fleet"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Celery signal receivers: they only fire inside a worker process (heartbeats, current run).
        from apps.fleet import heartbeat  # noqa: F401
