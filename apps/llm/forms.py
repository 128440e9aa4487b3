import json

from django import forms

from apps.llm.models import PRICE_FIELDS, EndpointModel, LLMEndpoint
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

    base_url = forms.URLField(max_length=500, assume_scheme="https", label="Base URL",
                              help_text="e.g. https://api.openai.com/v1")
    model_names = ModelNamesField(required=False, max_length=4000, label="Models",
                                  help_text="Comma-separated model ids offered here; empty allows any.")
    api_key = forms.CharField(required=False, max_length=4000, label="API key",
                              widget=forms.PasswordInput(render_value=False),
                              help_text="Stored encrypted. Leave empty to keep the stored key.")
    clear_api_key = forms.BooleanField(required=False, label="Clear the API key", help_text="Remove the stored key.")

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


class EndpointModelForm(forms.ModelForm):
    """One model's window and prices on an endpoint; empty prices fall back to the shipped defaults."""

    class Meta:
        model = EndpointModel
        fields = ("model", "context_window", "input_per_m", "cached_input_per_m", "output_per_m", "reasoning_per_m")
        widgets = {name: forms.NumberInput(attrs={"step": "any", "min": "0"}) for name in PRICE_FIELDS}

    def clean(self):
        data = super().clean()
        given = {name for name in PRICE_FIELDS if data.get(name) is not None}
        if given and not {"input_per_m", "output_per_m"} <= given:
            raise forms.ValidationError(
                "Give at least the input and output prices (cached input and reasoning are optional), or none "
                "to use the shipped defaults.")
        for name in given:
            if data[name] < 0:
                self.add_error(name, "Prices are at least 0.")
        window = data.get("context_window")
        if window is not None and window < 256:
            self.add_error("context_window", "A context window of fewer than 256 tokens cannot hold an agent's prompt.")
        return data


class BaseEndpointModelFormSet(forms.BaseInlineFormSet):
    def clean(self):
        super().clean()
        seen = set()
        for form in self.forms:
            if not hasattr(form, "cleaned_data") or form.cleaned_data.get("DELETE"):
                continue
            model = form.cleaned_data.get("model")
            if model in seen:
                form.add_error("model", "This model has a row already.")
            seen.add(model)


EndpointModelFormSet = forms.inlineformset_factory(
    LLMEndpoint, EndpointModel, form=EndpointModelForm, formset=BaseEndpointModelFormSet, extra=1, can_delete=True,
    max_num=100, validate_max=True,
)


class ConnectionTestForm(forms.Form):
    """Which models the connection test tries: those set on the endpoint and those the server listed."""

    models = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple,
                                       help_text="Empty: the endpoint's models, else the first the server lists.")

    def __init__(self, *args, endpoint: LLMEndpoint, **kwargs):
        super().__init__(*args, **kwargs)
        listed = (endpoint.last_test or {}).get("listed") or []
        names = list(dict.fromkeys([*endpoint.model_names, *listed[:40]]))
        self.fields["models"].choices = [(n, n) for n in names]
        self.fields["models"].initial = endpoint.model_names[:5]
