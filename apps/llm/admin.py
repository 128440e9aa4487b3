from django.contrib import admin

from apps.llm.forms import EndpointForm
from apps.llm.models import LLMEndpoint


class AdminEndpointForm(EndpointForm):
    class Meta(EndpointForm.Meta):
        fields = (*EndpointForm.Meta.fields, "owner")


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(admin.ModelAdmin):
    form = AdminEndpointForm
    list_display = ("name", "base_url", "owner", "has_api_key", "created_at")
    search_fields = ("name", "base_url")

    @admin.display(boolean=True, description="API key set")
    def has_api_key(self, obj):
        return obj.has_api_key
