from django.contrib import admin

from apps.experiments.models import Experiment, ExperimentRun
from apps.experiments.services import experiment_cancel


class ExperimentRunInline(admin.TabularInline):
    model = ExperimentRun
    fields = ("task", "seed_index", "attempt", "run", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "owner", "model", "rounds", "debug_rounds", "profile_mode", "seeds", "is_public",
                    "created_at")
    list_filter = ("profile_mode", "timing_protocol", "is_public")
    search_fields = ("name", "model", "owner__username", "selection")
    list_select_related = ("owner",)
    raw_id_fields = ("owner", "endpoint")
    readonly_fields = ("created_at",)
    inlines = (ExperimentRunInline,)
    actions = ("cancel_experiments",)

    @admin.action(description="Cancel the queued and running runs of the selected experiments")
    def cancel_experiments(self, request, queryset):
        cancelled = sum(experiment_cancel(e, by=request.user) for e in queryset)
        self.message_user(request, f"{cancelled} run(s) cancelled; finished runs were left as they are.")


@admin.register(ExperimentRun)
class ExperimentRunAdmin(admin.ModelAdmin):
    list_display = ("experiment", "task", "seed_index", "attempt", "run", "created_at")
    list_select_related = ("experiment", "task", "run")
    raw_id_fields = ("experiment", "task", "run")
