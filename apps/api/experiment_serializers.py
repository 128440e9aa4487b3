"""Response shapes and query parameters of the experiment endpoints (apps/api/experiment_views.py). Launch
validation itself lives in apps.experiments.forms.ExperimentLaunchForm, shared with the page."""

from rest_framework import serializers

from apps.api.serializers import LaunchSerializer
from apps.catalog.models import Precision
from apps.experiments.models import Experiment
from apps.experiments.reports import PRECISIONS
from apps.experiments.services import MAX_RUNS, MAX_SEEDS, NAME_MAX

# --- query parameters -------------------------------------------------------------------------------


class ExperimentQuerySerializer(serializers.Serializer):
    owner = serializers.ChoiceField(choices=["me"], required=False, help_text="`me`: only your own experiments.")


class PrecisionQuerySerializer(serializers.Serializer):
    precision = serializers.ChoiceField(choices=list(PRECISIONS), default="all",
                                        help_text="Analyse the trials of one precision, or all of them.")


class CompareQuerySerializer(PrecisionQuerySerializer):
    ids = serializers.RegexField(r"^\d+(,\d+)+$", help_text="Two experiment ids or more, comma-separated: 3,5,8.")

    def validate_ids(self, value: str) -> list[int]:
        ids = list(dict.fromkeys(int(part) for part in value.split(",")))
        if len(ids) < 2:
            raise serializers.ValidationError("name two different experiments or more")
        return ids


# --- experiments ------------------------------------------------------------------------------------


class ExperimentConfigSerializer(serializers.ModelSerializer):
    class Meta:
        model = Experiment
        fields = ["endpoint", "model", "agent_models", "rounds", "debug_rounds", "profile_mode", "timing_protocol",
                  "temperature", "seed", "time_budget_s", "token_budget", "cost_budget_usd"]


class ExperimentSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    config = ExperimentConfigSerializer(source="*", read_only=True)
    trials = serializers.IntegerField(read_only=True, help_text="(task, seed) pairs: the denominator of every rate.")
    active = serializers.IntegerField(read_only=True, help_text="Trials whose run is queued or running.")
    succeeded = serializers.IntegerField(read_only=True, help_text="Trials whose run succeeded.")

    class Meta:
        model = Experiment
        fields = ["id", "name", "description", "owner", "is_public", "selection", "seeds", "config", "created_at",
                  "trials", "active", "succeeded"]


class ProgressRowSerializer(serializers.Serializer):
    task = serializers.IntegerField(source="task_id")
    task_slug = serializers.CharField(source="task")
    operator = serializers.CharField()
    precision = serializers.ChoiceField(choices=Precision.choices)
    seed_index = serializers.IntegerField()
    attempt = serializers.IntegerField(help_text="0 for the launch, +1 per re-run.")
    run = serializers.IntegerField(source="run_id", allow_null=True, help_text="Null once the run was deleted.")
    status = serializers.CharField(help_text="The run's status, or `missing` when it was deleted.")
    best_score = serializers.FloatField(allow_null=True)
    error = serializers.CharField()


class ProgressSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    is_active = serializers.BooleanField(help_text="Some run is queued or running.")
    rerunnable = serializers.IntegerField(help_text="Trials a re-run of the failed ones would launch again.")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Trials per status.")
    rows = ProgressRowSerializer(many=True, help_text="The latest attempt of every (task, seed).")


class ExperimentDetailSerializer(ExperimentSerializer):
    progress = ProgressSerializer(read_only=True)

    class Meta(ExperimentSerializer.Meta):
        fields = [*ExperimentSerializer.Meta.fields, "progress"]


class ExperimentLaunchSerializer(LaunchSerializer):
    """The launch request body, for the schema only: ExperimentLaunchForm validates it, so the page and the
    API keep one set of rules (a test checks both name the same fields). The criteria combine."""

    name = serializers.CharField(max_length=NAME_MAX)
    description = serializers.CharField(required=False, allow_blank=True)
    suite = serializers.CharField(required=False, allow_blank=True, help_text="Every enabled task of this suite.")
    category = serializers.CharField(required=False, allow_blank=True, help_text="Only this category.")
    precision = serializers.ChoiceField(choices=Precision.choices, required=False, allow_blank=True)
    tasks = serializers.ListField(child=serializers.IntegerField(), required=False,
                                  help_text="Optional: only these task ids.")
    seeds = serializers.IntegerField(min_value=1, max_value=MAX_SEEDS, default=1,
                                     help_text=f"Runs per task; tasks × seeds at most {MAX_RUNS}.")
    gpu = None  # as ExperimentLaunchForm: experiments have no GPU target yet


class RerunSerializer(serializers.Serializer):
    runs = serializers.ListField(child=serializers.IntegerField(), help_text="Ids of the runs queued again.")


class CancelSerializer(serializers.Serializer):
    cancelled = serializers.IntegerField(help_text="How many queued or running runs were cancelled.")


class TableSerializer(serializers.Serializer):
    name = serializers.CharField()
    columns = serializers.ListField(child=serializers.CharField())
    rows = serializers.ListField(child=serializers.DictField(), help_text="One object per row: column → value.")


class AnalysesSerializer(serializers.Serializer):
    experiment = serializers.IntegerField()
    precision = serializers.ChoiceField(choices=list(PRECISIONS))
    trials = serializers.IntegerField()
    correct = serializers.IntegerField()
    tables = serializers.DictField(child=TableSerializer(), help_text="success_curve, fast_p, geomean_speedup, "
                                   "operators, library_comparison, cost, bottleneck_migration, outcomes.")
    charts = serializers.DictField(child=serializers.DictField(), help_text="Chart data (docs/frontend.md kinds).")


class ComparisonSerializer(serializers.Serializer):
    experiments = serializers.ListField(child=serializers.IntegerField())
    precision = serializers.ChoiceField(choices=list(PRECISIONS))
    tasks = serializers.IntegerField(help_text="Tasks every experiment covers (the only ones compared).")
    tables = serializers.DictField(child=TableSerializer(), help_text="ablation.")
    charts = serializers.DictField(child=serializers.DictField())
