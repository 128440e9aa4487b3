"""Mirror task specs from tasks/ into the database (the files stay the source of truth), and validate
a task's baseline on a GPU worker."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.catalog.models import Task
from worker.engine.results import Evaluation
from worker.engine.revision import task_revision
from worker.engine.taskspec import SpecError
from worker.registry import AnySpec, discover_tasks, format_of, load_task


@dataclass(frozen=True)
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # in the DB, no longer on disk: kept, reported
    errors: list[SpecError] = field(default_factory=list)


def source_hash(spec: AnySpec, precision: str) -> str:
    digest = hashlib.sha256()
    for path in spec.source_files(precision):
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def _task_fields(spec: AnySpec, precision: str, root: Path) -> dict:
    tolerance = spec.tolerance(precision)
    common = {
        "backend": spec.backend,
        "title": spec.title,
        "category": spec.category,
        "description": spec.description,
        "sizes": list(spec.sizes),
        "complexity": spec.complexity,
        "atol": tolerance.atol,
        "rtol": tolerance.rtol,
        "tolerance_note": tolerance.why,
        "baseline_source": spec.baseline_source(precision).read_text(encoding="utf-8"),
        "provenance": spec.provenance,
        "spec_path": str(Path(spec.path).relative_to(root)),
        "source_hash": source_hash(spec, precision),
        "revision": task_revision(Path(spec.path).parent),
    }
    return common | format_of(spec).catalog_fields(spec, precision)


def _sync_spec(spec: AnySpec, root: Path, report: SyncReport) -> set[tuple[str, str, str]]:
    """Create or update the rows of one spec (one per precision); returns their keys."""
    seen: set[tuple[str, str, str]] = set()
    for precision in spec.precisions:
        key = (spec.suite, spec.name, precision)
        seen.add(key)
        label = f"{spec.suite}/{spec.name}/{precision}"
        try:
            values = _task_fields(spec, precision, root)
        except OSError as exc:
            report.errors.append(SpecError(spec.path, "sources", f"cannot read: {exc}"))
            continue
        with transaction.atomic():
            task = Task.objects.select_for_update().filter(
                suite=spec.suite, operator=spec.name, precision=precision
            ).first()
            if task is None:
                Task.objects.create(suite=spec.suite, operator=spec.name, precision=precision, **values)
                report.created.append(label)
            elif task.source_hash == values["source_hash"] and task.revision == values["revision"]:
                report.unchanged.append(label)
            else:
                for name, value in values.items():
                    setattr(task, name, value)
                task.save()
                report.updated.append(label)
    return seen


def tasks_sync_specs(specs, root: Path) -> SyncReport:
    """Sync only these specs (e.g. the folders an admin import just wrote); nothing else is looked at."""
    report = SyncReport()
    for spec in specs:
        _sync_spec(spec, Path(root), report)
    return report


def tasks_sync(root: Path) -> SyncReport:
    """Idempotent: unchanged specs touch nothing; a bad spec is reported and its rows kept as they are."""
    root = Path(root)
    found = discover_tasks(root)
    report = SyncReport(errors=list(found.errors))
    seen: set[tuple[str, str, str]] = set()
    for spec in found.specs:
        seen |= _sync_spec(spec, root, report)
    bad_dirs = {Path(e.path).parent.name for e in report.errors}
    for suite, operator, precision in Task.objects.values_list("suite", "operator", "precision"):
        if (suite, operator, precision) not in seen and operator not in bad_dirs:
            report.missing.append(f"{suite}/{operator}/{precision}")
    return report


# ---------------------------------------------------------------- baseline validation


@dataclass(frozen=True)
class ValidationOutcome:
    verdict: str  # a worker Verdict value, or "spec_error"
    detail: str


def tasks_mark_validation_queued(task_ids) -> int:
    """Show "queued" in the admin until the GPU worker stores the outcome."""
    return Task.objects.filter(pk__in=list(task_ids)).update(
        validation_verdict="queued", validation_detail="waiting for a GPU worker"
    )


def _validation_detail(evaluation: Evaluation) -> str:
    lines = [evaluation.reason or str(evaluation.verdict)]
    if evaluation.gpu:
        lines.append(f"GPU: {evaluation.gpu}")
    checked = [s for s in evaluation.sizes if s.correct is not None]
    if checked:
        passed = sum(1 for s in checked if s.correct)
        lines.append(f"{passed}/{len(checked)} sizes match the CPU reference ({evaluation.seeds} seeds each)")
    if evaluation.compile is not None and not evaluation.compile.ok and evaluation.compile.log:
        lines.append(evaluation.compile.log[-2000:])
    return "\n".join(lines)


def task_validate_baseline(task_id: int, *, chain=None) -> ValidationOutcome:
    """Run the task's baseline against its CPU reference (worker.registry.validate) and
    store the outcome.

    On a machine without a GPU the outcome is the no_gpu verdict with the toolchain's reason.
    """
    from worker.registry import validate  # the worker's toolchain imports stay out of web processes

    task = Task.objects.get(pk=task_id)
    outcome: ValidationOutcome
    if not task.spec_path:
        outcome = ValidationOutcome("spec_error", "the task has no spec file under TASKS_DIR (it was not synced)")
    else:
        try:
            spec = load_task(Path(settings.TASKS_DIR) / task.spec_path)
        except SpecError as exc:
            outcome = ValidationOutcome("spec_error", f"the spec cannot be read: {exc}")
        else:
            if task.precision not in spec.precisions:
                outcome = ValidationOutcome("spec_error", f"the spec no longer has a {task.precision} variant")
            else:
                evaluation = validate(spec, task.precision, chain=chain)
                outcome = ValidationOutcome(str(evaluation.verdict), _validation_detail(evaluation))
    Task.objects.filter(pk=task_id).update(
        validated_at=timezone.now(), validation_verdict=outcome.verdict, validation_detail=outcome.detail
    )
    return outcome
