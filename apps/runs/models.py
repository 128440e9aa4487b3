import json

from django.conf import settings
from django.db import models

from apps.runs.presenter import describe_event, run_failure, short_reason
from worker.engine.revision import short_revision


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"

    @classmethod
    def terminal(cls) -> frozenset[str]:
        return frozenset({cls.SUCCEEDED, cls.FAILED, cls.CANCELLED})


# The state machine: which status may follow which. Terminal states are final.
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    RunStatus.QUEUED: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED}),
    RunStatus.RUNNING: frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED}),
    RunStatus.SUCCEEDED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}


class ProfileMode(models.TextChoices):
    FILTERED = "filtered", "Filtered (class-specific metrics)"
    FULL = "full", "Full (all six sections)"
    NONE = "none", "None (no profiling)"


class TimingProtocol(models.TextChoices):
    """How the evaluator times each call (docs/evaluation.md, "Timing protocol"); worker.engine.context's
    TIMING_PROTOCOLS, queued being EvalOptions.queued_timing."""

    SYNCHRONIZED = "synchronized", "Synchronized — comparable with the benchmark's own harness"
    QUEUED = "queued", "Queued — the kernel's own time, repeatable"


class Run(models.Model):
    """One optimization run of the agent pipeline on one task."""

    task = models.ForeignKey("catalog.Task", on_delete=models.PROTECT, related_name="runs")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs")
    is_public = models.BooleanField(default=False, help_text="Visible to every signed-in user.")

    # Configuration
    endpoint = models.ForeignKey(
        "llm.LLMEndpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    model = models.CharField(max_length=200, help_text="Default model for every agent.")
    agent_models = models.JSONField(default=dict, blank=True, help_text="Per-role override, e.g. {'coder': 'x'}.")
    rounds = models.PositiveSmallIntegerField(default=3, help_text="Optimization rounds R.")
    debug_rounds = models.PositiveSmallIntegerField(default=3, help_text="Debug rounds D per invalid candidate.")
    profile_mode = models.CharField(max_length=16, choices=ProfileMode.choices, default=ProfileMode.FILTERED)
    timing_protocol = models.CharField(
        max_length=16, choices=TimingProtocol.choices, default=TimingProtocol.SYNCHRONIZED,
        help_text="How every evaluation of the run times a call: synchronized (a device-wide synchronize after "
                  "each, as the benchmark's own harness) or queued (the kernel's own time).")
    temperature = models.FloatField(default=0.2)
    seed = models.BigIntegerField(null=True, blank=True)
    time_budget_s = models.PositiveIntegerField(null=True, blank=True)
    token_budget = models.PositiveBigIntegerField(null=True, blank=True)
    cost_budget_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)

    # Lifecycle
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    queue = models.CharField(max_length=100, blank=True,
                             help_text="Celery queue it was sent to: gpu (any GPU worker) or gpu.<model> (gpu.h100).")
    task_revision = models.CharField(max_length=64, blank=True,
                                     help_text="The task folder's revision at launch; the worker refuses another.")
    worker_host = models.CharField(max_length=200, blank=True)
    worker_name = models.CharField(max_length=200, blank=True, help_text="Celery node name, e.g. gpu1@host.")
    gpu_name = models.CharField(max_length=200, blank=True)
    gpu_index = models.PositiveSmallIntegerField(null=True, blank=True, help_text="As nvidia-smi numbers it.")
    gpu_uuid = models.CharField(max_length=100, blank=True)
    error = models.TextField(blank=True)

    # Outcome and totals
    best_turn = models.ForeignKey("Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    best_score = models.FloatField(null=True, blank=True, help_text="Best complexity-weighted speedup P.")
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    wall_time_s = models.FloatField(default=0)
    gpu_time_s = models.FloatField(default=0)

    # How many workers have started this run: a second start means the first worker was lost.
    attempts = models.PositiveSmallIntegerField(default=0, editable=False)

    # Where the run came from: "" for runs executed here, "import:<sha256>" for a loaded trajectory.
    origin = models.CharField(max_length=80, blank=True, db_index=True)

    # Event stream bookkeeping: the last RunEvent.seq handed out for this run.
    last_event_seq = models.PositiveBigIntegerField(default=0, editable=False)

    # Delivery to a worker, a transactional outbox on the row itself (apps/runs/delivery.py): run_create
    # sets `dispatch_pending` in the transaction that saves the run; the send after commit clears it and
    # stamps `dispatched_at`. A failed send leaves it pending for the reconciler. `claim_message` is the
    # Celery message that moved the run to running: only a redelivery of that message may take it over.
    dispatch_pending = models.BooleanField(default=False, editable=False)
    dispatched_at = models.DateTimeField(null=True, blank=True, editable=False)
    dispatch_attempts = models.PositiveSmallIntegerField(default=0, editable=False,
                                                         help_text="Messages sent for this run.")
    claim_message = models.CharField(max_length=64, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "-created_at"]),
            models.Index(fields=["status", "-created_at"]),
            models.Index(fields=["status", "dispatched_at"], name="runs_run_delivery"),
            models.Index(fields=["task", "-best_score"]),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} · {self.task} · {self.status}"

    @property
    def short_task_revision(self) -> str:
        return short_revision(self.task_revision)

    @property
    def is_active(self) -> bool:
        return self.status in (RunStatus.QUEUED, RunStatus.RUNNING)

    @property
    def failure(self) -> str:
        """Why a failed or cancelled run ended, in full; '' for the others."""
        return run_failure(self.status, self.error)

    @property
    def failure_short(self) -> str:
        return short_reason(self.failure)


class TurnKind(models.TextChoices):
    BASELINE = "baseline", "Baseline"
    OPTIMIZE = "optimize", "Optimize"
    DEBUG = "debug", "Debug"
    MANUAL = "manual", "Manual"


class Turn(models.Model):
    """One candidate in a run: round i (0 = baseline), debug sub-turn j (0 = the optimize turn)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="turns")
    round_index = models.PositiveSmallIntegerField()
    debug_index = models.PositiveSmallIntegerField(default=0)
    kind = models.CharField(max_length=16, choices=TurnKind.choices)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    scheme = models.TextField(blank=True, help_text="The Planner's (or Debug agent's) text.")
    code = models.TextField(blank=True)
    compile_command = models.TextField(blank=True)
    compile_log = models.TextField(blank=True)
    ptxas = models.JSONField(default=dict, blank=True, help_text="Per kernel: registers, shared memory, spills.")
    results = models.JSONField(
        default=list, blank=True, help_text="Per size: params, correct, timings, speedup, CV, first mismatch."
    )
    verdict = models.CharField(max_length=32, blank=True, help_text="ok, rejected, compile_error, incorrect, ...")
    reason = models.TextField(blank=True)
    notes = models.JSONField(
        default=list, blank=True,
        help_text="How the engine built and timed this turn, e.g. timed beside its baseline, flags replaced.",
    )
    score = models.FloatField(null=True, blank=True, help_text="Complexity-weighted speedup P.")
    valid = models.BooleanField(default=False)
    llm_seconds = models.FloatField(default=0)
    compile_seconds = models.FloatField(default=0)
    eval_seconds = models.FloatField(default=0)
    profile_seconds = models.FloatField(default=0)
    # A manual turn's evaluation not yet handed to the broker (it was unreachable): the reconciler sends it.
    dispatch_pending = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "round_index", "debug_index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "round_index", "debug_index"], name="turn_unique_position"),
        ]

    def __str__(self) -> str:
        label = f"round {self.round_index}"
        if self.debug_index:
            label += f".{self.debug_index}"
        return f"Run {self.run_id} {label} ({self.kind})"


class Bottleneck(models.TextChoices):
    # The engine's values (worker.engine.results.Bottleneck), stored as they come.
    COMPUTE = "compute_bound", "Compute bound"
    MEMORY_LATENCY = "memory_latency_bound", "Memory latency bound"
    MEMORY_BANDWIDTH = "memory_bandwidth_bound", "Memory bandwidth bound"
    UNKNOWN = "unknown", "Unknown"


class TurnAssembly(models.Model):
    """The PTX and SASS of a turn's compiled object (worker/engine/assembly.py), apart from Turn so that
    timelines and lists never load hundreds of kilobytes per turn."""

    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="assembly")
    ptx = models.TextField(blank=True)
    sass = models.TextField(blank=True)
    note = models.CharField(max_length=500, blank=True, help_text="Why a listing is missing or cut.")

    def __str__(self) -> str:
        return f"assembly of turn {self.turn_id}"


class VerificationStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # asked for, not finished (sent, or waiting for a GPU worker)
    VERIFIED = "verified", "Verified"
    DISAGREES = "disagrees", "Disagrees"  # the fresh evaluation contradicts the record
    FAILED = "failed", "Could not verify"  # the verification itself could not run (no GPU, task changed, crash)


class TurnVerification(models.Model):
    """A published turn evaluated again in a fresh process with inputs it has never seen (apps/runs/verification.py).

    One row per attempt; the newest finished row is the turn's verification status. The fresh evaluation's
    own numbers are kept so a disagreement can be read in full.
    """

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="verifications")
    status = models.CharField(max_length=16, choices=VerificationStatus.choices, default=VerificationStatus.PENDING)
    requested_at = models.DateTimeField(auto_now_add=True)
    dispatched_at = models.DateTimeField(null=True, blank=True, editable=False)
    finished_at = models.DateTimeField(null=True, blank=True)
    seed_base = models.BigIntegerField(help_text="First input seed of the fresh evaluation (never the recorded one).")
    gpu_name = models.CharField(max_length=200, blank=True)
    verdict = models.CharField(max_length=32, blank=True)
    score = models.FloatField(null=True, blank=True, help_text="P of the fresh evaluation.")
    recorded_score = models.FloatField(null=True, blank=True, help_text="P recorded for the turn at the time.")
    summary = models.TextField(blank=True, help_text="One sentence: what the fresh evaluation showed.")
    results = models.JSONField(default=list, blank=True, help_text="The fresh evaluation's per-size results.")

    class Meta:
        ordering = ["-requested_at", "-id"]
        indexes = [models.Index(fields=["turn", "-requested_at"]), models.Index(fields=["status", "dispatched_at"])]

    def __str__(self) -> str:
        return f"verification {self.pk} of turn {self.turn_id}: {self.status}"


class Profile(models.Model):
    """Nsight Compute metrics of one kernel of a turn at one size."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="profiles")
    size_index = models.PositiveSmallIntegerField()
    size = models.JSONField(default=dict)
    kernel = models.CharField(max_length=500)
    bottleneck = models.CharField(max_length=32, choices=Bottleneck.choices, default=Bottleneck.UNKNOWN)
    filtered_metrics = models.JSONField(default=dict, blank=True)
    full_metrics = models.JSONField(default=dict, blank=True)
    tool_version = models.CharField(max_length=100, blank=True)
    gpu_name = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["turn", "size_index", "kernel"]
        indexes = [models.Index(fields=["bottleneck"])]

    def __str__(self) -> str:
        return f"{self.turn} size {self.size_index} {self.kernel} ({self.bottleneck})"


class AgentRole(models.TextChoices):
    PLANNER = "planner", "Planner"
    CODER = "coder", "Coder"
    COMPILER = "compiler", "Compiler"
    DEBUG = "debug", "Debug"


class AgentCall(models.Model):
    """One LLM request and its response, with accounting."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="agent_calls")
    role = models.CharField(max_length=16, choices=AgentRole.choices)
    model = models.CharField(max_length=200)
    messages = models.JSONField(default=list)
    response = models.TextField(blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_s = models.FloatField(default=0)
    error = models.TextField(blank=True)
    # Beside the answer (worker/agents/llm.py): the model's reasoning, the tokens it reports for it and for
    # cached input, the window the prompt was fitted to, and what was changed to get an answer.
    reasoning = models.TextField(blank=True)
    reasoning_tokens = models.PositiveIntegerField(null=True, blank=True)
    cached_tokens = models.PositiveIntegerField(default=0)
    context_window = models.PositiveIntegerField(null=True, blank=True)
    prompt_estimate = models.PositiveIntegerField(default=0)
    priced = models.BooleanField(default=True)  # False: no price for the model, cost_usd 0 means unknown
    estimated_tokens = models.BooleanField(default=False)
    notes = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["turn", "created_at", "id"]
        indexes = [models.Index(fields=["role", "model"])]

    def __str__(self) -> str:
        return f"{self.role} call on {self.turn}"


class RunEvent(models.Model):
    """Append-only log of everything a run does; the websocket replays it by seq."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    type = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_seq")]

    def __str__(self) -> str:
        return f"Run {self.run_id} #{self.seq} {self.type}"

    @property
    def text(self) -> str:
        """The event as a sentence (apps/runs/presenter.py); the payload stays behind it as JSON."""
        return describe_event(self.type, self.payload)

    @property
    def payload_json(self) -> str:
        return json.dumps(self.payload, indent=2, sort_keys=True, ensure_ascii=False)

    def as_message(self) -> dict:
        return {
            "seq": self.seq,
            "type": self.type,
            "text": self.text,
            "payload": self.payload,
            "created": self.created_at.isoformat(),
        }
