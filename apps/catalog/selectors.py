"""Reads for the task catalog. Best known results go through `runs_visible_to`, so a private run of
someone else never shows up as a task's best."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import groupby

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery

from apps.catalog.models import Precision, Task
from apps.runs.models import Bottleneck, Profile, Run
from apps.runs.selectors import runs_visible_to
from worker.engine.taskspec import eval_complexity


def task_count() -> int:
    return Task.objects.filter(enabled=True).count()


def tasks_enabled() -> QuerySet[Task]:
    return Task.objects.filter(enabled=True)


def _bottleneck_label(value: str) -> str:
    return dict(Bottleneck.choices).get(value, value) if value else ""


def category_label(category: str) -> str:
    return category.replace("_", " ").capitalize()


@dataclass(frozen=True)
class TaskCell:
    """One precision variant of an operator, with what the catalog shows about it."""

    task: Task
    bottleneck: str  # Bottleneck value of the baseline, "" when no run has profiled it
    best_score: float | None
    best_run_id: int | None

    @property
    def bottleneck_label(self) -> str:
        return _bottleneck_label(self.bottleneck)


@dataclass(frozen=True)
class OperatorRow:
    """One operator with its precision variants, so FP32 and BF16 show side by side."""

    operator: str
    fp32: TaskCell | None
    bf16: TaskCell | None

    @property
    def any(self) -> Task:
        return (self.fp32 or self.bf16).task

    @property
    def variants(self) -> tuple[TaskCell | None, TaskCell | None]:
        return (self.fp32, self.bf16)


@dataclass(frozen=True)
class CategoryGroup:
    category: str
    label: str
    rows: tuple[OperatorRow, ...]


@dataclass(frozen=True)
class CatalogFilters:
    q: str = ""
    suite: str = ""
    category: str = ""

    @classmethod
    def from_query(cls, query) -> CatalogFilters:
        return cls(
            q=query.get("q", "").strip()[:100],
            suite=query.get("suite", "").strip()[:64],
            category=query.get("category", "").strip()[:64],
        )

    @property
    def active(self) -> bool:
        return bool(self.q or self.suite or self.category)


@dataclass(frozen=True)
class Catalog:
    groups: tuple[CategoryGroup, ...]
    suites: tuple[str, ...]
    categories: tuple[tuple[str, str], ...]  # (value, label)
    filters: CatalogFilters

    @property
    def operator_count(self) -> int:
        return sum(len(g.rows) for g in self.groups)


def _with_best_known(tasks: QuerySet[Task], user) -> QuerySet[Task]:
    """Annotate each task with the best P among runs the user may see, and that run's id (no extra query)."""
    best = (
        runs_visible_to(user)
        .filter(task=OuterRef("pk"), best_score__isnull=False)
        .order_by("-best_score", "id")
    )
    return tasks.annotate(
        best_known_score=Subquery(best.values("best_score")[:1]),
        best_known_run=Subquery(best.values("id")[:1]),
    )


def baseline_bottlenecks(task_ids) -> dict[int, str]:
    """The most common profiled class of each task's baseline turn (round 0), over every run of the task.

    The baseline is the task's own naive code, the same in every run, so its class is a property of
    the task, not of anyone's run. "unknown" profiles do not count; a tie goes to the first class in
    Bottleneck's order. One query.
    """
    counts: dict[int, Counter] = defaultdict(Counter)
    rows = (
        Profile.objects.filter(turn__round_index=0, turn__debug_index=0, turn__run__task_id__in=list(task_ids))
        .exclude(bottleneck=Bottleneck.UNKNOWN)
        .values_list("turn__run__task_id", "bottleneck")
        .annotate(n=Count("id"))
        .order_by()
    )
    for task_id, bottleneck, n in rows:
        counts[task_id][bottleneck] += n
    order = {value: i for i, value in enumerate(Bottleneck.values)}
    return {
        task_id: min(counter.items(), key=lambda item: (-item[1], order.get(item[0], 99)))[0]
        for task_id, counter in counts.items()
    }


def _cell(task: Task, bottlenecks: dict[int, str]) -> TaskCell:
    return TaskCell(task, bottlenecks.get(task.pk, ""), task.best_known_score, task.best_known_run)


def catalog(user, filters: CatalogFilters) -> Catalog:
    """Enabled tasks grouped by category, one row per operator. Three queries in all."""
    enabled = Task.objects.filter(enabled=True)
    facets = list(enabled.order_by().values_list("suite", "category").distinct())
    tasks = enabled
    if filters.q:
        q = filters.q
        tasks = tasks.filter(
            Q(operator__icontains=q) | Q(title__icontains=q) | Q(description__icontains=q)
            | Q(entry_point__icontains=q)
        )
    if filters.suite:
        tasks = tasks.filter(suite=filters.suite)
    if filters.category:
        tasks = tasks.filter(category=filters.category)
    tasks = list(
        _with_best_known(tasks, user)
        .defer("baseline_source", "description")
        .order_by("category", "operator", "suite", "precision")
    )
    bottlenecks = baseline_bottlenecks(t.pk for t in tasks)
    groups = []
    for category, in_category in groupby(tasks, key=lambda t: t.category):
        rows = []
        for (operator, _suite), variants in groupby(in_category, key=lambda t: (t.operator, t.suite)):
            by_precision = {t.precision: _cell(t, bottlenecks) for t in variants}
            rows.append(OperatorRow(operator, by_precision.get(Precision.FP32), by_precision.get(Precision.BF16)))
        groups.append(CategoryGroup(category, category_label(category), tuple(rows)))
    return Catalog(
        groups=tuple(groups),
        suites=tuple(sorted({s for s, _ in facets})),
        categories=tuple((c, category_label(c)) for c in sorted({c for _, c in facets})),
        filters=filters,
    )


@dataclass(frozen=True)
class SizeRow:
    index: int
    params: dict
    complexity: float | None  # T(size); None when the expression cannot be evaluated
    weight: float | None  # T / ΣT: this size's share of the score P
    error: str = ""

    @property
    def params_display(self) -> str:
        return ", ".join(f"{k} = {_number(v)}" for k, v in self.params.items())

    @property
    def weight_display(self) -> str:
        return "" if self.weight is None else f"{self.weight * 100:.1f}%"

    @property
    def complexity_display(self) -> str:
        if self.complexity is None:
            return ""
        if abs(self.complexity) < 1e6:
            return _number(self.complexity)
        mantissa, exponent = f"{self.complexity:.2e}".split("e")
        return f"{float(mantissa):g}e{int(exponent)}"


def _number(value) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def size_rows(task: Task) -> list[SizeRow]:
    """The spec's complexity expression evaluated at every size, with each size's weight in P."""
    values: list[tuple[float | None, str]] = []
    for size in task.sizes:
        try:
            values.append((eval_complexity(task.complexity, size), ""))
        except (SyntaxError, ValueError, ZeroDivisionError, OverflowError) as exc:
            values.append((None, str(exc)))
    total = sum(v for v, _ in values if v)
    # jsonb (PostgreSQL) reorders keys: put them back in the entry point's parameter order.
    order = [p["name"] for p in task.params or [] if isinstance(p, dict) and "name" in p]

    def ordered(size: dict) -> dict:
        return {k: size[k] for k in [n for n in order if n in size] + sorted(k for k in size if k not in order)}

    return [
        SizeRow(i, ordered(size), value, value / total if value and total else None, error)
        for i, (size, (value, error)) in enumerate(zip(task.sizes, values, strict=True))
    ]


@dataclass(frozen=True)
class TaskPage:
    task: Task
    variants: tuple[Task, ...]  # the other precisions of the operator
    sizes: tuple[SizeRow, ...]
    bottleneck: str
    best_run: Run | None
    recent_runs: tuple[Run, ...]

    @property
    def bottleneck_label(self) -> str:
        return _bottleneck_label(self.bottleneck)


RECENT_RUNS = 10


def task_page(user, task: Task) -> TaskPage:
    visible = runs_visible_to(user).filter(task=task)
    best = visible.filter(best_score__isnull=False).order_by("-best_score", "id").first()
    return TaskPage(
        task=task,
        variants=tuple(
            Task.objects.filter(suite=task.suite, operator=task.operator, enabled=True)
            .exclude(pk=task.pk)
            .only("pk", "precision")
        ),
        sizes=tuple(size_rows(task)),
        bottleneck=baseline_bottlenecks([task.pk]).get(task.pk, ""),
        best_run=best,
        recent_runs=tuple(visible.order_by("-created_at", "-id")[:RECENT_RUNS]),
    )
