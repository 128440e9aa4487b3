from itertools import groupby

from django.db.models import QuerySet

from apps.catalog.models import Task


def task_count() -> int:
    return Task.objects.filter(enabled=True).count()


def tasks_enabled() -> QuerySet[Task]:
    return Task.objects.filter(enabled=True)


def operators_by_category() -> list[tuple[str, list[tuple[str, dict[str, Task]]]]]:
    """[(category, [(operator, {precision: task})])]: FP32 and BF16 of one operator together."""
    tasks = Task.objects.filter(enabled=True).order_by("category", "operator", "precision")
    result = []
    for category, in_category in groupby(tasks, key=lambda t: t.category):
        operators = [
            (operator, {t.precision: t for t in variants})
            for operator, variants in groupby(in_category, key=lambda t: t.operator)
        ]
        result.append((category, operators))
    return result
