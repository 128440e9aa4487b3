from django.contrib import admin

from apps.accounts.models import Quota


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = ("__str__", "active_runs", "active_experiments", "pending_manual_turns", "note")
    search_fields = ("user__username", "group__name", "note")
    autocomplete_fields = ("user",)
    list_select_related = ("user", "group")
