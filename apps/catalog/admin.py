from django.contrib import admin

from apps.catalog.models import Task


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("operator", "precision", "suite", "category", "complexity", "enabled", "updated_at")
    list_filter = ("suite", "category", "precision", "enabled")
    search_fields = ("operator", "title", "description")
    list_editable = ("enabled",)
    ordering = ("suite", "operator", "precision")  # FP32 and BF16 of an operator side by side
    readonly_fields = ("source_hash", "created_at", "updated_at")
    actions = ("enable", "disable")

    @admin.action(description="Enable selected tasks")
    def enable(self, request, queryset):
        queryset.update(enabled=True)

    @admin.action(description="Disable selected tasks")
    def disable(self, request, queryset):
        queryset.update(enabled=False)
