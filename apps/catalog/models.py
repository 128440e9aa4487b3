from django.db import models

from worker import registry
from worker.engine.formats import TaskFormat
from worker.engine.taskspec import PRECISIONS

# Both from the worker, the one source: the precisions a spec may declare, and the registered task formats.
Precision = models.TextChoices("Precision", [(p.upper(), (p, p.upper())) for p in PRECISIONS])
Backend = models.TextChoices("Backend", [(f.name.upper(), (f.name, f.label)) for f in registry.FORMATS.values()])


class ShowcasePlacement(models.TextChoices):
    AUTO = "auto", "Automatic"  # listed when its best verified turn passes the showcase threshold
    FEATURED = "featured", "Featured"  # listed first (still only with an eligible turn)
    HIDDEN = "hidden", "Hidden"  # never listed


class Task(models.Model):
    """One optimizable unit: an operator at one precision, mirrored from tasks/<suite>/<op>/spec.toml
    (or task.yaml); `backend` says which engine evaluates it."""

    backend = models.CharField(max_length=16, choices=Backend.choices, default=registry.BACKENDS[0])
    suite = models.CharField(max_length=64)
    operator = models.CharField(max_length=128, help_text="Operator id; FP32 and BF16 variants share it.")
    precision = models.CharField(max_length=8, choices=Precision.choices)
    title = models.CharField(max_length=200)
    category = models.CharField(max_length=64)
    description = models.TextField(help_text="Markdown with $math$.")
    entry_point = models.CharField(max_length=128)
    interface = models.TextField(help_text="The C declaration of the baseline entry point.")
    params = models.JSONField(default=list, help_text="[{name, type}] of the entry point, in order.")
    outputs = models.JSONField(default=list)
    sizes = models.JSONField(default=list, help_text="One object of named parameters per size.")
    constants = models.JSONField(default=dict, blank=True)
    inputs = models.JSONField(default=dict, blank=True, help_text="Distribution per input buffer.")
    complexity = models.CharField(max_length=200, help_text="T(sizes), e.g. M*N*K.")
    atol = models.FloatField()
    rtol = models.FloatField()
    tolerance_note = models.TextField(blank=True)
    baseline_source = models.TextField()
    provenance = models.TextField(blank=True)
    rules = models.JSONField(default=dict, blank=True, help_text="blocked_symbols, allowed_libraries; "
                             "forbid_torch_compute; blocked_patterns, required_patterns.")
    details = models.JSONField(default=dict, blank=True, help_text="What only this backend has: the model "
                               "file, the build and run commands, the hardware requirement, the source.")
    enabled = models.BooleanField(default=True)
    showcase = models.CharField(max_length=16, choices=ShowcasePlacement.choices, default=ShowcasePlacement.AUTO,
                                help_text="Curated by admins; sync_tasks never changes it.")
    spec_path = models.CharField(max_length=500, blank=True, help_text="Relative to TASKS_DIR.")
    source_hash = models.CharField(max_length=64, blank=True, help_text="Hash of spec + sources at last sync.")
    revision = models.CharField(max_length=64, blank=True,
                                help_text="Hash of the whole task folder at last sync (worker.engine.revision).")
    # The last "Validate baseline on GPU" (baseline vs the CPU reference, worker.formats.cuda.evaluation.validate).
    validated_at = models.DateTimeField(null=True, blank=True)
    validation_verdict = models.CharField(
        max_length=32, blank=True, help_text="ok, incorrect, no_gpu, compile_error, ...; 'queued' while waiting."
    )
    validation_detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["suite", "category", "operator", "precision"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "operator", "precision"], name="task_unique_op_precision"),
        ]
        indexes = [
            models.Index(fields=["backend", "suite"]),
            models.Index(fields=["category", "operator"]),
            models.Index(fields=["enabled", "suite"]),
        ]

    def __str__(self) -> str:
        return f"{self.suite}/{self.operator} [{self.precision}]"

    @property
    def format(self) -> TaskFormat:
        """The task's format (worker.registry): how it is shown, prompted and evaluated."""
        return registry.get(self.backend)

    @property
    def slug(self) -> str:
        return f"{self.suite}/{self.operator}/{self.precision}"
