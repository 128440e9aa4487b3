from django.contrib import admin, messages

from apps.llm.connection import run_connection_test
from apps.llm.forms import EndpointForm, EndpointModelForm
from apps.llm.models import EndpointModel, LLMEndpoint


class AdminEndpointForm(EndpointForm):
    class Meta(EndpointForm.Meta):
        fields = (*EndpointForm.Meta.fields, "owner")


class EndpointModelInline(admin.TabularInline):
    """Windows and prices per model, also for shared endpoints (which only the admin edits)."""

    model = EndpointModel
    form = EndpointModelForm
    extra = 1
    readonly_fields = ("server_context_window", "refused_params", "token_limit_field", "learned_at")


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(admin.ModelAdmin):
    form = AdminEndpointForm
    inlines = [EndpointModelInline]
    list_display = ("name", "base_url", "owner", "has_api_key", "last_test_ok", "last_test_at", "created_at")
    search_fields = ("name", "base_url")
    readonly_fields = ("last_test_at", "last_test_ok", "last_passed_at")
    actions = ["connection_test"]

    @admin.display(boolean=True, description="API key set")
    def has_api_key(self, obj):
        return obj.has_api_key

    @admin.action(description="Run the connection test (about a minute at most per endpoint)")
    def connection_test(self, request, queryset):
        for endpoint in queryset[:5]:
            report = run_connection_test(endpoint)
            failed = [f"{m.model}: {m.error}" for m in report.models if not m.ok]
            detail = report.error or "; ".join(failed) or f"{len(report.models)} model(s) answered"
            self.message_user(request, f"{endpoint.name}: {'passed' if report.ok else 'failed'}: {detail}",
                              messages.SUCCESS if report.ok else messages.ERROR)
