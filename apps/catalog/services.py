"""Mirror task specs from tasks/ into the database (the files stay the source of truth)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from apps.catalog.models import Task
from worker.spec import SpecError, TaskSpec, discover


@dataclass(frozen=True)
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # in the DB, no longer on disk: kept, reported
    errors: list[SpecError] = field(default_factory=list)


def _source_hash(spec: TaskSpec, precision: str) -> str:
    digest = hashlib.sha256()
    for path in (Path(spec.path), spec.baseline_source(precision), spec.harness_source()):
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def _task_fields(spec: TaskSpec, precision: str, root: Path) -> dict:
    iface = spec.interfaces[precision]
    tolerance = spec.tolerance(precision)
    return {
        "title": spec.title,
        "category": spec.category,
        "description": spec.description,
        "entry_point": iface.entry,
        "interface": iface.signature,
        "params": [{"name": p.name, "type": p.ctype} for p in iface.params],
        "outputs": list(spec.outputs),
        "sizes": list(spec.sizes),
        "constants": spec.constants,
        "inputs": spec.inputs,
        "complexity": spec.complexity,
        "atol": tolerance.atol,
        "rtol": tolerance.rtol,
        "tolerance_note": tolerance.why,
        "baseline_source": spec.baseline_source(precision).read_text(encoding="utf-8"),
        "provenance": spec.provenance,
        "rules": {
            "blocked_symbols": list(spec.blocked_symbols),
            "allowed_libraries": list(spec.allowed_libraries),
        },
        "spec_path": str(Path(spec.path).relative_to(root)),
        "source_hash": _source_hash(spec, precision),
    }


def tasks_sync(root: Path) -> SyncReport:
    """Idempotent: unchanged specs touch nothing; a bad spec is reported and its rows kept as they are."""
    root = Path(root)
    found = discover(root)
    report = SyncReport(errors=list(found.errors))
    seen: set[tuple[str, str, str]] = set()
    for spec in found.specs:
        for precision in spec.interfaces:
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
                elif task.source_hash == values["source_hash"]:
                    report.unchanged.append(label)
                else:
                    for name, value in values.items():
                        setattr(task, name, value)
                    task.save()
                    report.updated.append(label)
    bad_dirs = {Path(e.path).parent.name for e in report.errors}
    for suite, operator, precision in Task.objects.values_list("suite", "operator", "precision"):
        if (suite, operator, precision) not in seen and operator not in bad_dirs:
            report.missing.append(f"{suite}/{operator}/{precision}")
    return report
