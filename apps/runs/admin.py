from django.contrib import admin

from apps.runs.models import AgentCall, Profile, Run, RunEvent, Turn, TurnVerification
from apps.runs.services import run_cancel
from apps.runs.verification import published_runs, verification_request


class TurnInline(admin.TabularInline):
    model = Turn
    fields = ("round_index", "debug_index", "kind", "verdict", "score", "valid")
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "task", "owner", "model", "status", "best_score", "created_at", "gpu_name")
    list_filter = ("status", "profile_mode", "timing_protocol", "task__suite", "task__precision")
    search_fields = ("task__operator", "model", "owner__username")
    list_select_related = ("task", "owner")
    readonly_fields = ("last_event_seq", "created_at", "started_at", "finished_at", "best_turn")
    raw_id_fields = ("task", "owner", "endpoint")
    inlines = (TurnInline,)
    actions = ("cancel_runs", "verify_best_turns")

    @admin.action(description="Cancel selected runs (stops at the next pipeline step)")
    def cancel_runs(self, request, queryset):
        cancelled = sum(run_cancel(run) for run in queryset)
        self.message_user(request, f"{cancelled} run(s) cancelled; finished runs were left as they are.")

    @admin.action(description="Verify best turns again (fresh evaluation with unseen inputs, on a GPU worker)")
    def verify_best_turns(self, request, queryset):
        runs = published_runs().filter(pk__in=queryset.values("pk")).select_related("best_turn")
        asked = [verification_request(run.best_turn).pk for run in runs]
        skipped = queryset.count() - len(asked)
        note = f"; {skipped} run(s) skipped: not succeeded or not published" if skipped else "."
        self.message_user(request, f"{len(asked)} verification(s) asked for{note}")


@admin.register(TurnVerification)
class TurnVerificationAdmin(admin.ModelAdmin):
    """Written by GPU workers only: read here, asked for from the run list or `manage.py verify_published`."""

    list_display = ("turn", "status", "gpu_name", "verdict", "recorded_score", "score", "requested_at", "finished_at")
    list_filter = ("status",)
    raw_id_fields = ("turn",)
    readonly_fields = [f.name for f in TurnVerification._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ("__str__", "kind", "verdict", "score", "valid", "created_at")
    list_filter = ("kind", "valid", "verdict")
    raw_id_fields = ("run", "parent")


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ("turn", "size_index", "kernel", "bottleneck", "gpu_name")
    list_filter = ("bottleneck",)
    raw_id_fields = ("turn",)


@admin.register(AgentCall)
class AgentCallAdmin(admin.ModelAdmin):
    list_display = ("turn", "role", "model", "tokens_in", "tokens_out", "cost_usd", "latency_s")
    list_filter = ("role", "model")
    raw_id_fields = ("turn",)


@admin.register(RunEvent)
class RunEventAdmin(admin.ModelAdmin):
    list_display = ("run", "seq", "type", "created_at")
    list_filter = ("type",)
    raw_id_fields = ("run",)

    def has_change_permission(self, request, obj=None):
        return False  # the event log is append-only
