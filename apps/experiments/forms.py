from django import forms

from apps.catalog.models import Precision
from apps.catalog.selectors import tasks_enabled
from apps.experiments.selectors import TaskSelection
from apps.experiments.services import MAX_RUNS, MAX_SEEDS, NAME_MAX, experiment_launch
from apps.runs.forms import LaunchForm


class ExperimentLaunchForm(LaunchForm):
    """An experiment's launch: the run configuration of LaunchForm (same fields, same checks), a name,
    and the task selection: suite, category, precision and/or hand-picked tasks, combined. Shared by the
    page and the API."""

    name = forms.CharField(max_length=NAME_MAX, help_text="Shown in lists and as the column of comparisons.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                                  help_text="Optional: what this configuration tests.")
    suite = forms.ChoiceField(required=False, help_text="Every enabled task of this suite.")
    category = forms.ChoiceField(required=False, help_text="Only this category.")
    precision = forms.ChoiceField(required=False, choices=[("", "any"), *Precision.choices],
                                  help_text="Only this precision.")
    seeds = forms.IntegerField(min_value=1, max_value=MAX_SEEDS, initial=1,
                               help_text="Runs per task, seed k getting seed + k.")
    gpu = None  # no GPU target for experiments yet: an Experiment stores no queue, its runs go to GPU_QUEUE

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        tasks = tasks_enabled()
        self.fields["tasks"].required = False
        self.fields["tasks"].help_text = "Optional: only these tasks (combined with the criteria above)."
        self.fields["suite"].choices = [("", "any"), *((s, s) for s in
                                                         tasks.order_by("suite").values_list("suite", flat=True)
                                                         .distinct())]
        self.fields["category"].choices = [("", "any"), *((c, c.replace("_", " ")) for c in
                                                            tasks.order_by("category")
                                                            .values_list("category", flat=True).distinct())]
        self.selected_tasks: list = []

    def clean_tasks(self):
        return self.cleaned_data["tasks"]  # no per-launch cap here: an experiment allows MAX_RUNS runs

    def selection(self) -> TaskSelection:
        data = self.cleaned_data
        return TaskSelection(suite=data.get("suite") or "", category=data.get("category") or "",
                             precision=data.get("precision") or "",
                             task_ids=tuple(sorted(t.pk for t in data.get("tasks") or ())))

    def clean(self):
        data = super().clean()
        if any(name in self.errors for name in ("tasks", "suite", "category", "precision", "seeds")):
            return data
        selection = self.selection()
        if selection == TaskSelection():
            # An empty selection would be the whole library: make that a deliberate choice of a suite.
            raise forms.ValidationError("Choose the tasks: a suite, a category, a precision or hand-picked tasks.")
        self.selected_tasks = list(selection.tasks())
        if not self.selected_tasks:
            raise forms.ValidationError(f"No enabled task matches this selection ({selection.describe()}).")
        runs = len(self.selected_tasks) * data["seeds"]
        if runs > MAX_RUNS:
            raise forms.ValidationError(f"{len(self.selected_tasks)} tasks × {data['seeds']} seeds is {runs} runs; "
                                        f"at most {MAX_RUNS} per experiment.")
        return data

    def launch(self, owner):
        """The experiment this valid form describes, queued (services.experiment_launch, whose ExperimentError
        and QuotaExceeded the page and the API each report their way)."""
        data = self.cleaned_data
        return experiment_launch(owner=owner, name=data["name"], tasks=self.selected_tasks, config=self.to_config(),
                                 seeds=data["seeds"], selection=self.selection().describe(),
                                 description=data["description"], is_public=data["is_public"])
