from django import forms

from apps.catalog.selectors import tasks_enabled
from apps.llm.selectors import endpoints_for
from apps.runs.models import ProfileMode
from apps.runs.services import RunConfig


class LaunchForm(forms.Form):
    task = forms.ModelChoiceField(queryset=None, help_text="Operator and precision to optimize.")
    endpoint = forms.ModelChoiceField(queryset=None, required=False, help_text="OpenAI-compatible endpoint.")
    model = forms.CharField(max_length=200, help_text="Model id used by every agent.")
    rounds = forms.IntegerField(min_value=1, max_value=30, initial=3, help_text="Optimization rounds R.")
    debug_rounds = forms.IntegerField(min_value=0, max_value=10, initial=3, help_text="Debug rounds D.")
    profile_mode = forms.ChoiceField(choices=ProfileMode.choices, initial=ProfileMode.FILTERED)
    temperature = forms.FloatField(min_value=0.0, max_value=2.0, initial=0.2)
    seed = forms.IntegerField(required=False, min_value=0, max_value=2**62)
    is_public = forms.BooleanField(required=False, label="Visible to every signed-in user")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["task"].queryset = tasks_enabled()
        self.fields["endpoint"].queryset = endpoints_for(user)

    def clean(self):
        data = super().clean()
        endpoint, model = data.get("endpoint"), data.get("model")
        if endpoint and endpoint.model_names and model and model not in endpoint.model_names:
            self.add_error("model", f"{endpoint.name} offers: {', '.join(endpoint.model_names)}")
        return data

    def to_config(self) -> RunConfig:
        data = self.cleaned_data
        return RunConfig(
            model=data["model"],
            rounds=data["rounds"],
            debug_rounds=data["debug_rounds"],
            profile_mode=data["profile_mode"],
            temperature=data["temperature"],
            seed=data["seed"],
            endpoint_id=data["endpoint"].pk if data["endpoint"] else None,
        )


class ManualTurnForm(forms.Form):
    code = forms.CharField(widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"}),
                           help_text='Defines extern "C" void <entry>_optimized(<same parameters>).')
    flags = forms.CharField(required=False, max_length=1000, label="nvcc command",
                            help_text="Optional, e.g. nvcc -O3 --use_fast_math; checked against the whitelist.")
