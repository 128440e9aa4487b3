from dataclasses import dataclass
from itertools import groupby

from django.db.models import QuerySet

from apps.catalog.models import Task


def task_count() -> int:
    return Task.objects.filter(enabled=True).count()


def tasks_enabled() -> QuerySet[Task]:
    return Task.objects.filter(enabled=True)


@dataclass(frozen=True)
class OperatorRow:
    """One operator with its precision variants, so FP32 and BF16 show side by side."""

    operator: str
    fp32: Task | None
    bf16: Task | None

    @property
    def any(self) -> Task:
        return self.fp32 or self.bf16


def operators_by_category() -> list[tuple[str, list[OperatorRow]]]:
    tasks = Task.objects.filter(enabled=True).order_by("category", "operator", "precision")
    result = []
    for category, in_category in groupby(tasks, key=lambda t: t.category):
        rows = []
        for operator, variants in groupby(in_category, key=lambda t: t.operator):
            by_precision = {t.precision: t for t in variants}
            rows.append(OperatorRow(operator, by_precision.get("fp32"), by_precision.get("bf16")))
        result.append((category, rows))
    return result
