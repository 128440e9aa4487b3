from django.contrib import admin

from apps.fleet.models import Worker


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    """Read-only: workers write their own rows. Delete a retired worker here; a live one registers again."""

    list_display = ("name", "host", "gpu_index", "gpu_name", "driver", "last_seen", "stopped_at", "current_run")
    search_fields = ("name", "host", "gpu_name")
    readonly_fields = [f.name for f in Worker._meta.fields]

    def has_add_permission(self, request):
        return False
