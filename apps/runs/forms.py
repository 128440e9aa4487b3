import copy

from django import forms

from apps.catalog.selectors import tasks_enabled
from apps.fleet.selectors import gpu_targets, target_queue
from apps.llm.selectors import endpoint_test_warning, endpoints_for
from apps.runs.models import ProfileMode, TimingProtocol
from apps.runs.services import RunConfig
from worker import registry
from worker.agents.pipeline import ROLES

ROLE_FIELDS = {role: f"{role}_model" for role in ROLES}


class LaunchForm(forms.Form):
    """Validation for launching runs, shared by the page and the API (one run per selected task)."""

    tasks = forms.ModelMultipleChoiceField(
        queryset=None, help_text="One or more operators and precisions; each gets its own run."
    )
    endpoint = forms.ModelChoiceField(queryset=None, required=False, help_text="OpenAI-compatible endpoint.")
    model = forms.CharField(max_length=200, help_text="Model id used by every agent without its own below.")
    planner_model = forms.CharField(max_length=200, required=False, help_text="Optional: model for the Planner.")
    coder_model = forms.CharField(max_length=200, required=False, help_text="Optional: model for the Coder.")
    compiler_model = forms.CharField(max_length=200, required=False,
                                     help_text="Optional: model for the Compiler agent.")
    debug_model = forms.CharField(max_length=200, required=False, help_text="Optional: model for the Debug agent.")
    rounds = forms.IntegerField(min_value=0, max_value=30, initial=3,
                                help_text="Optimization rounds R (0 = evaluate and profile the baseline only).")
    debug_rounds = forms.IntegerField(min_value=0, max_value=10, initial=3, help_text="Debug rounds D.")
    profile_mode = forms.ChoiceField(choices=ProfileMode.choices, initial=ProfileMode.FILTERED)
    # Not required: a launch that leaves it out (an older client, a script) is timed as before, synchronized.
    timing_protocol = forms.TypedChoiceField(
        choices=TimingProtocol.choices, initial=TimingProtocol.SYNCHRONIZED, required=False,
        empty_value=TimingProtocol.SYNCHRONIZED, label="Timing",
        help_text="How each call is timed (docs/evaluation.md, \"Timing protocol\"): synchronized agrees with the "
                  "benchmark's own harness; queued times the kernel alone and repeats better.")
    temperature = forms.FloatField(min_value=0.0, max_value=2.0, initial=0.2)
    seed = forms.IntegerField(required=False, min_value=0, max_value=2**62,
                              help_text="Passed to the model where the endpoint supports it.")
    time_budget_s = forms.IntegerField(required=False, min_value=60, max_value=7 * 24 * 3600,
                                       label="Time budget (s)", help_text="Stop after this wall time.")
    token_budget = forms.IntegerField(required=False, min_value=1000, label="Token budget",
                                      help_text="Stop once this many tokens are spent.")
    cost_budget_usd = forms.DecimalField(required=False, min_value=0, max_digits=10, decimal_places=4,
                                         label="Cost budget (USD)", help_text="Stop once this much is spent.")
    is_public = forms.BooleanField(required=False, label="Public: visible to everyone, anonymous visitors included")
    # Any queue name is accepted (a worker may come later, and the run then waits with a clear status);
    # the select offers the GPU models the registry knows.
    gpu = forms.CharField(required=False, max_length=100, label="GPU", widget=forms.Select,
                          help_text="Run on this GPU model (queue gpu.<model>), or any GPU worker.")

    MAX_TASKS = 100

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["tasks"].queryset = tasks_enabled()
        self.fields["endpoint"].queryset = endpoints_for(user)
        self.gpu_targets = gpu_targets() if "gpu" in self.fields else []  # a subclass may drop the field
        if self.gpu_targets:
            self.fields["gpu"].widget.choices = [(t.value, t.label) for t in self.gpu_targets]

    def gpu_warnings(self) -> list[str]:
        """Shown above the submit button: targets whose runs would wait for a worker."""
        return [f"{t.label.split(' · ')[0]}: no live worker consumes {t.queue}; runs sent there wait until one "
                "starts (make worker on a GPU host)." for t in self.gpu_targets if not t.live]

    def endpoint_warnings(self) -> list[str]:
        """Shown above the submit button: the chosen endpoint never passed its connection test; before one is
        chosen, which of the offered endpoints never did."""
        endpoints = self.fields["endpoint"].queryset
        chosen = self.data.get("endpoint") if self.is_bound else None
        if chosen:
            endpoint = endpoints.filter(pk=chosen).first() if str(chosen).isdigit() else None
            warning = endpoint_test_warning(endpoint)
            return [warning] if warning else []
        untested = [e.name for e in endpoints if e.last_passed_at is None]
        if not untested:
            return []
        if len(untested) == 1:
            return [endpoint_test_warning(endpoints.get(name=untested[0]))] if endpoints.count() == 1 else [
                f"{untested[0]}: its connection test has never passed (test it on the endpoint's page)."]
        return [f"Never passed a connection test: {', '.join(untested)} (test them on their endpoint pages)."]

    def clean_gpu(self) -> str:
        queue = target_queue(self.cleaned_data.get("gpu", ""))
        if not queue:
            raise forms.ValidationError("Name a GPU model (h100), its queue (gpu.h100), or leave empty for any GPU.")
        return queue

    def task_groups(self) -> list[tuple[str, list[tuple[object, bool]]]]:
        """Enabled tasks by category for the picker, each with whether it is ticked."""
        chosen = set(self.data.getlist("tasks") if self.is_bound else (self.initial.get("tasks") or []))
        groups: dict[str, list] = {}
        for task in self.fields["tasks"].queryset.order_by("category", "operator", "precision"):
            groups.setdefault(task.category.replace("_", " "), []).append((task, str(task.pk) in chosen))
        return list(groups.items())

    def clean_tasks(self):
        tasks = self.cleaned_data["tasks"]
        if len(tasks) > self.MAX_TASKS:
            raise forms.ValidationError(f"At most {self.MAX_TASKS} tasks per launch; use an experiment for more.")
        return tasks

    def clean(self):
        data = super().clean()
        endpoint = data.get("endpoint")
        if endpoint and endpoint.model_names:
            for name in ("model", *ROLE_FIELDS.values()):
                model = data.get(name)
                if model and model not in endpoint.model_names:
                    self.add_error(name, f"{endpoint.name} offers: {', '.join(endpoint.model_names)}")
        return data

    def to_config(self) -> RunConfig:
        data = self.cleaned_data
        return RunConfig(
            model=data["model"],
            agent_models={role: data[field] for role, field in ROLE_FIELDS.items() if data.get(field)},
            rounds=data["rounds"],
            debug_rounds=data["debug_rounds"],
            profile_mode=data["profile_mode"],
            timing_protocol=data["timing_protocol"],
            temperature=data["temperature"],
            seed=data["seed"],
            endpoint_id=data["endpoint"].pk if data["endpoint"] else None,
            time_budget_s=data.get("time_budget_s"),
            token_budget=data.get("token_budget"),
            cost_budget_usd=float(data["cost_budget_usd"]) if data.get("cost_budget_usd") is not None else None,
            queue=data.get("gpu") or "",
        )


class ManualTurnForm(forms.Form):
    code = forms.CharField(widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false", "data-editor": "cuda"}))
    flags = forms.CharField(required=False, max_length=1000, label="nvcc command",
                            help_text="Optional, e.g. nvcc -O3 --use_fast_math; checked against the whitelist.")

    def __init__(self, *args, backend: str = registry.BACKENDS[0], new_run: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if new_run:  # a run of its own chooses how it is timed; a turn on an existing run keeps the run's protocol
            self.fields["timing_protocol"] = copy.deepcopy(LaunchForm.base_fields["timing_protocol"])
        fmt = registry.get(backend)
        self.fields["code"].help_text = fmt.display.candidate_help  # what a candidate is in this format
        self.fields["code"].widget.attrs["data-editor"] = fmt.language
        if fmt.compile_flags is None:
            del self.fields["flags"]  # the build is the task's own: no nvcc command to choose
