from django import forms
from django.contrib import admin

from apps.llm.models import LLMEndpoint


class LLMEndpointForm(forms.ModelForm):
    base_url = forms.URLField(max_length=500, assume_scheme="https", help_text="e.g. https://api.openai.com/v1")
    # Write-only: the stored key is never rendered back into the page.
    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Leave empty to keep the stored key.",
    )
    clear_api_key = forms.BooleanField(required=False, help_text="Remove the stored key.")

    class Meta:
        model = LLMEndpoint
        fields = ("name", "base_url", "model_names", "owner")

    def save(self, commit=True):
        endpoint = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            endpoint.set_api_key("")
        elif self.cleaned_data.get("api_key"):
            endpoint.set_api_key(self.cleaned_data["api_key"])
        if commit:
            endpoint.save()
        return endpoint


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(admin.ModelAdmin):
    form = LLMEndpointForm
    list_display = ("name", "base_url", "owner", "has_api_key", "created_at")
    search_fields = ("name", "base_url")

    @admin.display(boolean=True, description="API key set")
    def has_api_key(self, obj):
        return obj.has_api_key
