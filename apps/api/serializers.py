"""Response shapes, plus query-parameter serializers that validate filters (a bad value is a 400, not a
silently ignored filter) and document them in the schema. Launch validation itself lives in LaunchForm."""

from rest_framework import serializers

from apps.api.filters import RUN_ORDERINGS
from apps.catalog.models import Backend, Precision, Task
from apps.fleet.selectors import queue_states, run_queue, wait_reason
from apps.llm.models import LLMEndpoint
from apps.runs.forms import LaunchForm
from apps.runs.models import AgentCall, Profile, ProfileMode, Run, RunStatus, TimingProtocol, Turn

# --- query parameters -------------------------------------------------------------------------------


class TaskQuerySerializer(serializers.Serializer):
    backend = serializers.ChoiceField(
        choices=Backend.choices, required=False,
        help_text="Task format: " + "; ".join(f"{value} = {label}" for value, label in Backend.choices) + ".",
    )
    suite = serializers.CharField(required=False)
    category = serializers.CharField(required=False)
    precision = serializers.ChoiceField(choices=Precision.choices, required=False)
    operator = serializers.CharField(required=False)
    q = serializers.CharField(required=False, help_text="Substring of the title, operator or description.")


class RunQuerySerializer(serializers.Serializer):
    task = serializers.IntegerField(required=False, min_value=1, help_text="Task id.")
    status = serializers.ChoiceField(choices=RunStatus.choices, required=False)
    owner = serializers.ChoiceField(choices=["me"], required=False, help_text="`me`: only your own runs.")
    suite = serializers.CharField(required=False)
    category = serializers.CharField(required=False)
    model = serializers.CharField(required=False, help_text="The run's default model.")
    ordering = serializers.ChoiceField(choices=list(RUN_ORDERINGS), default="-created_at")


class EventQuerySerializer(serializers.Serializer):
    after = serializers.IntegerField(min_value=0, default=0, help_text="Last seq you have; 0 for all.")
    limit = serializers.IntegerField(min_value=1, max_value=1000, default=1000)


class ProfileQuerySerializer(serializers.Serializer):
    turn = serializers.IntegerField(required=False, min_value=1, help_text="Turn id.")
    run = serializers.IntegerField(required=False, min_value=1, help_text="Run id.")


# --- catalog ----------------------------------------------------------------------------------------


class TaskSerializer(serializers.ModelSerializer):
    class Meta:
        model = Task
        fields = ["id", "slug", "backend", "suite", "operator", "precision", "title", "category", "entry_point",
                  "complexity"]


class TaskDetailSerializer(serializers.ModelSerializer):
    class Meta:
        model = Task
        fields = [*TaskSerializer.Meta.fields, "description", "interface", "params", "outputs", "sizes",
                  "constants", "inputs", "atol", "rtol", "tolerance_note", "rules", "details", "provenance",
                  "baseline_source"]


# --- LLM endpoints ----------------------------------------------------------------------------------


class EndpointSerializer(serializers.ModelSerializer):
    """Whether a key is set, never the key: not even masked, so no response can leak a prefix."""

    has_key = serializers.BooleanField(source="has_api_key", read_only=True)
    shared = serializers.SerializerMethodField(help_text="Offered to every user (no owner).")

    class Meta:
        model = LLMEndpoint
        fields = ["id", "name", "base_url", "model_names", "has_key", "shared"]

    def get_shared(self, endpoint: LLMEndpoint) -> bool:
        return endpoint.owner_id is None


# --- runs -------------------------------------------------------------------------------------------


class RunConfigSerializer(serializers.ModelSerializer):
    class Meta:
        model = Run
        fields = ["endpoint", "model", "agent_models", "rounds", "debug_rounds", "profile_mode", "timing_protocol",
                  "temperature", "seed", "time_budget_s", "token_budget", "cost_budget_usd"]


class RunSerializer(serializers.ModelSerializer):
    task_slug = serializers.CharField(source="task.slug", read_only=True)
    owner = serializers.CharField(source="owner.username", read_only=True)
    config = RunConfigSerializer(source="*", read_only=True)
    best_turn = serializers.PrimaryKeyRelatedField(source="best_turn_id", read_only=True)
    last_seq = serializers.IntegerField(source="last_event_seq", read_only=True)
    waiting = serializers.SerializerMethodField(
        help_text='Why a queued run is not being picked up, e.g. "waiting: no live worker for queue gpu.h100 '
                  '(last seen 3 minutes ago: gpu0@host)"; empty otherwise.')

    class Meta:
        model = Run
        fields = ["id", "task", "task_slug", "owner", "is_public", "status", "config", "created_at", "started_at",
                  "finished_at", "queue", "worker_host", "worker_name", "gpu_name", "gpu_index", "gpu_uuid", "error",
                  "best_turn", "best_score", "tokens_in", "tokens_out", "cost_usd", "wall_time_s", "gpu_time_s",
                  "origin", "last_seq", "waiting"]

    def get_waiting(self, run: Run) -> str:
        if run.status != RunStatus.QUEUED:
            return ""
        if "queue_states" not in self.context:  # once per response, shared by a list's runs
            self.context["queue_states"] = queue_states()
        return wait_reason(run_queue(run), self.context["queue_states"])


class LaunchSerializer(serializers.Serializer):
    """The launch request body, for the schema only: apps.runs.forms.LaunchForm validates it, so the page and
    the API keep one set of rules (a test checks both name the same fields)."""

    tasks = serializers.ListField(child=serializers.IntegerField(), min_length=1,
                                  max_length=LaunchForm.MAX_TASKS, help_text="Task ids; one run each.")
    endpoint = serializers.IntegerField(required=False, allow_null=True,
                                        help_text="LLM endpoint id (yours or a shared one).")
    model = serializers.CharField(max_length=200, help_text="Model for every agent without its own below.")
    planner_model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    coder_model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    compiler_model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    debug_model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    rounds = serializers.IntegerField(min_value=0, max_value=30, default=3, help_text="Optimization rounds R.")
    debug_rounds = serializers.IntegerField(min_value=0, max_value=10, default=3, help_text="Debug rounds D.")
    profile_mode = serializers.ChoiceField(choices=ProfileMode.choices, default=ProfileMode.FILTERED)
    timing_protocol = serializers.ChoiceField(
        choices=TimingProtocol.choices, default=TimingProtocol.SYNCHRONIZED,
        help_text="`synchronized`: a device-wide synchronize after every timed call, P comparable with the "
                  "benchmark's own harness; `queued`: the kernel's own time, repeatable (docs/evaluation.md).")
    temperature = serializers.FloatField(min_value=0.0, max_value=2.0, default=0.2)
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=2**62)
    time_budget_s = serializers.IntegerField(required=False, allow_null=True, min_value=60)
    token_budget = serializers.IntegerField(required=False, allow_null=True, min_value=1000)
    cost_budget_usd = serializers.DecimalField(required=False, allow_null=True, min_value=0, max_digits=10,
                                               decimal_places=4)
    is_public = serializers.BooleanField(required=False, default=False)
    gpu = serializers.CharField(required=False, allow_blank=True, max_length=100,
                                help_text="GPU target: a model (h100), its queue (gpu.h100), or empty for any GPU "
                                          "worker. /api/workers/ lists the live ones.")


class LaunchedSerializer(serializers.Serializer):
    runs = RunSerializer(many=True)


class DetailSerializer(serializers.Serializer):
    detail = serializers.CharField()


QUOTA_EXCEEDED = ("Over your quota (apps/runs/quotas.py): `detail` names the limit and what you have in flight; "
                  "nothing was created.")


class QuotaExceededSerializer(serializers.Serializer):
    detail = serializers.CharField()
    limit = serializers.IntegerField()
    in_flight = serializers.IntegerField()
    quota = serializers.ChoiceField(choices=["active_runs", "active_experiments", "pending_manual_turns"])


# --- turns, profiles, agent calls, events -----------------------------------------------------------

TURN_SUMMARY_FIELDS = ["id", "run", "round_index", "debug_index", "kind", "parent", "verdict", "score", "valid",
                       "reason", "llm_seconds", "compile_seconds", "eval_seconds", "profile_seconds", "created_at"]


class TurnSummarySerializer(serializers.ModelSerializer):
    class Meta:
        model = Turn
        fields = TURN_SUMMARY_FIELDS


class ProfileSerializer(serializers.ModelSerializer):
    class Meta:
        model = Profile
        fields = ["id", "turn", "size_index", "size", "kernel", "bottleneck", "filtered_metrics", "full_metrics",
                  "tool_version", "gpu_name"]


class TurnProfileSerializer(serializers.ModelSerializer):
    """The Planner's view of a profile; the full metric set is at /api/profiles/?turn=<id>."""

    class Meta:
        model = Profile
        fields = ["id", "size_index", "size", "kernel", "bottleneck", "filtered_metrics"]


class AgentCallSerializer(serializers.ModelSerializer):
    class Meta:
        model = AgentCall
        fields = ["id", "role", "model", "tokens_in", "tokens_out", "cost_usd", "latency_s", "error", "messages",
                  "response", "created_at"]


class TurnSerializer(serializers.ModelSerializer):
    profiles = TurnProfileSerializer(many=True, read_only=True)
    agent_calls = AgentCallSerializer(many=True, read_only=True)

    class Meta:
        model = Turn
        fields = [*TURN_SUMMARY_FIELDS, "scheme", "code", "compile_command", "compile_log", "ptxas", "results",
                  "notes", "profiles", "agent_calls"]


class EventSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    type = serializers.CharField()
    text = serializers.CharField(help_text="The event as a sentence (apps/runs/presenter.py; docs/events.md).")
    payload = serializers.JSONField()
    created = serializers.DateTimeField()


class EventPageSerializer(serializers.Serializer):
    events = EventSerializer(many=True, help_text="RunEvent.as_message(), in seq order.")
    last_seq = serializers.IntegerField(help_text="Pass as `after` on the next poll.")
    finished = serializers.BooleanField(help_text="The run has ended and no events remain: stop polling.")
    status = serializers.ChoiceField(choices=RunStatus.choices)


class ShareCreateSerializer(serializers.Serializer):
    a = serializers.IntegerField(help_text="Turn id shown on the left (e.g. the baseline).")
    b = serializers.IntegerField(help_text="Turn id shown on the right.")


class ShareLinkSerializer(serializers.Serializer):
    key = serializers.CharField()
    url = serializers.CharField(help_text="The public page; anyone with the link sees the snapshot.")
    snapshot = serializers.JSONField(help_text="What the page shows, frozen at creation.")
    created_at = serializers.DateTimeField()
