import json

from django import forms

from apps.llm.models import LLMEndpoint
from apps.llm.ssrf import UnsafeEndpoint, check_base_url


class ModelNamesField(forms.CharField):
    """Model ids typed as a comma- or newline-separated list (or a JSON list), stored as a JSON list."""

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list) else value

    def to_python(self, value):
        text = (super().to_python(value) or "").strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise forms.ValidationError(f"Not a JSON list of model ids: {exc.msg}.") from None
            if not isinstance(parsed, list) or not all(isinstance(n, str) for n in parsed):
                raise forms.ValidationError("A JSON list of model ids must hold strings only.")
            text = ",".join(parsed)
        names = [n.strip() for n in text.replace("\n", ",").split(",") if n.strip()]
        too_long = [n for n in names if len(n) > 200]
        if too_long:
            raise forms.ValidationError(f"Model ids are at most 200 characters: {too_long[0][:40]}…")
        return list(dict.fromkeys(names))


class EndpointForm(forms.ModelForm):
    """An endpoint with a write-only key: the stored key is never rendered back into a page."""

    base_url = forms.URLField(max_length=500, assume_scheme="https", help_text="e.g. https://api.openai.com/v1")
    model_names = ModelNamesField(required=False, max_length=4000, label="Models",
                                  help_text="Comma-separated model ids offered here; empty allows any.")
    api_key = forms.CharField(required=False, max_length=4000, widget=forms.PasswordInput(render_value=False),
                              help_text="Stored encrypted. Leave empty to keep the stored key.")
    clear_api_key = forms.BooleanField(required=False, help_text="Remove the stored key.")

    class Meta:
        model = LLMEndpoint
        fields = ("name", "base_url", "model_names")

    def __init__(self, *args, owner=None, **kwargs):
        super().__init__(*args, **kwargs)
        if owner is not None and self.instance.pk is None:
            self.instance.owner = owner

    def clean_base_url(self):
        base_url = self.cleaned_data["base_url"]
        try:
            # A name that does not resolve yet is accepted: the worker checks again before every run.
            check_base_url(base_url, unresolvable_ok=True)
        except UnsafeEndpoint as exc:
            raise forms.ValidationError(f"Refused: {exc}.") from None
        return base_url

    def clean_name(self):
        name = self.cleaned_data["name"]
        owner = self.instance.owner if self.instance.owner_id else None
        if owner and LLMEndpoint.objects.filter(owner=owner, name=name).exclude(pk=self.instance.pk).exists():
            raise forms.ValidationError("You already have an endpoint with this name.")
        return name

    def save(self, commit=True):
        endpoint = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            endpoint.set_api_key("")
        elif self.cleaned_data.get("api_key"):
            endpoint.set_api_key(self.cleaned_data["api_key"])
        if commit:
            endpoint.save()
        return endpoint
