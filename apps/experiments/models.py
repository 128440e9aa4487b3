"""Experiments: one named configuration launched over a set of tasks, optionally several seeds.

Runs stay as they are (apps.runs.models is untouched): `ExperimentRun` ties a run to its experiment,
task and seed. A re-run of a failed member adds a row with the next `attempt`; the analyses read the
latest attempt of every (task, seed), so the history of earlier attempts is kept.
"""

from django.conf import settings
from django.db import models

from apps.runs.models import ProfileMode, TimingProtocol


class Experiment(models.Model):
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="experiments")
    description = models.TextField(blank=True)
    selection = models.CharField(
        max_length=500, blank=True, help_text="How the tasks were chosen, e.g. 'suite mskernelbench, precision bf16'."
    )
    is_public = models.BooleanField(default=False, help_text="Visible to every signed-in user (its runs too).")
    created_at = models.DateTimeField(auto_now_add=True)

    # Configuration, mirroring apps.runs.services.RunConfig; every run of the experiment gets it.
    endpoint = models.ForeignKey(
        "llm.LLMEndpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="experiments"
    )
    model = models.CharField(max_length=200, help_text="Default model for every agent.")
    agent_models = models.JSONField(default=dict, blank=True, help_text="Per-role override, e.g. {'coder': 'x'}.")
    rounds = models.PositiveSmallIntegerField(default=3, help_text="Optimization rounds R.")
    debug_rounds = models.PositiveSmallIntegerField(default=3, help_text="Debug rounds D per invalid candidate.")
    profile_mode = models.CharField(max_length=16, choices=ProfileMode.choices, default=ProfileMode.FILTERED)
    timing_protocol = models.CharField(
        max_length=16, choices=TimingProtocol.choices, default=TimingProtocol.SYNCHRONIZED,
        help_text="How every run of the experiment times a call: synchronized (as the benchmark's own harness) "
                  "or queued (the kernel's own time).")
    temperature = models.FloatField(default=0.2)
    seed = models.BigIntegerField(null=True, blank=True, help_text="Base seed; seed k of several gets seed + k.")
    time_budget_s = models.PositiveIntegerField(null=True, blank=True)
    token_budget = models.PositiveBigIntegerField(null=True, blank=True)
    cost_budget_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    seeds = models.PositiveSmallIntegerField(default=1, help_text="Runs per task, each with its own seed.")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "-created_at"])]

    def __str__(self) -> str:
        return f"Experiment {self.pk} · {self.name}"


class ExperimentRun(models.Model):
    """One (task, seed) of an experiment and the run that serves it; `run` is NULL once that run is deleted
    (the task then counts as a failure, never silently drops out of the denominators)."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="members")
    task = models.ForeignKey("catalog.Task", on_delete=models.PROTECT, related_name="experiment_members")
    seed_index = models.PositiveSmallIntegerField(default=0)
    attempt = models.PositiveSmallIntegerField(default=0, help_text="0 for the launch, +1 per re-run.")
    run = models.OneToOneField(
        "runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="experiment_link"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["experiment_id", "task_id", "seed_index", "attempt"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "task", "seed_index", "attempt"], name="experimentrun_unique_attempt"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.experiment} · {self.task} · seed {self.seed_index} · attempt {self.attempt}"
