"""What the experiment pages and the API show: every analysis of one experiment, or of several side by side,
for one precision or all of them, as the tables (CSV, JSON) and chart data of apps.experiments.export.

Pages, downloads and the API all go through `experiment_report` / `comparison_report`, so a table on the
page, its CSV and its JSON are the same `Table`. The numbers come from analysis.py (pure functions) over
selectors.outcomes_for (the database).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from apps.catalog.models import Precision
from apps.experiments import export, svg
from apps.experiments.analysis import (
    AblationTable,
    BottleneckMigration,
    CostSummary,
    ExperimentOutcomes,
    FastP,
    GeomeanSpeedup,
    LibraryComparison,
    OperatorRow,
    SuccessCurve,
    TaskOutcome,
    ablation_table,
    bottleneck_migration,
    common_tasks,
    cost_summary,
    fast_p,
    geomean_speedup,
    library_comparison,
    per_operator,
    success_curve,
)
from apps.experiments.models import Experiment
from apps.experiments.selectors import LibraryReference, experiment_outcomes, outcomes_for
from apps.runs.models import Bottleneck

ALL = "all"
PRECISIONS: tuple[str, ...] = (ALL, *Precision.values)
FORMATS = ("csv", "json")


def parse_precision(value: str | None) -> str | None:
    """"all" for no value, a precision as given, None for anything else (the caller refuses it)."""
    value = (value or ALL).strip().lower()
    return value if value in PRECISIONS else None


def precision_label(precision: str) -> str:
    return "all precisions" if precision == ALL else dict(Precision.choices).get(precision, precision)


def _only(outcomes: Sequence[TaskOutcome], precision: str) -> list[TaskOutcome]:
    return list(outcomes) if precision == ALL else [o for o in outcomes if o.precision == precision]


@dataclass(frozen=True)
class ChartSpec:
    title: str
    kind: str  # the kw-charts kind that draws it in the browser
    render: Callable[[dict[str, Any], str], str]  # the server-side SVG


CHARTS: dict[str, ChartSpec] = {
    "success_curve": ChartSpec("Cumulative success rate vs speedup threshold τ", "lines", svg.lines_svg),
    "fast_p": ChartSpec("fast_p: correct and speedup > p", "lines", svg.lines_svg),
    "operators": ChartSpec("Best candidate vs library reference, per operator", "operators", svg.bars_svg),
}


@dataclass(frozen=True)
class MigrationCell:
    count: int
    shade: float  # 0..1, the count relative to the largest cell, for the colour

    @property
    def background(self) -> str:
        """The cell's colour: the accent blue, more opaque the larger the count (none for 0)."""
        return f"rgba(11, 107, 203, {0.1 + 0.75 * self.shade:.2f})" if self.count else "transparent"

    @property
    def shade_class(self) -> str:
        """The same colour as a CSS class (static/css/experiments.css), in 11 steps: the Content-Security-Policy
        allows no style= attributes."""
        return f"shade-{round(10 * self.shade)}" if self.count else ""


@dataclass(frozen=True)
class MigrationRow:
    label: str
    cells: tuple[MigrationCell, ...]
    total: int


# ------------------------------------------------------------------------------------- one experiment


@dataclass(frozen=True)
class ExperimentReport:
    precision: str
    outcomes: tuple[TaskOutcome, ...]
    curve: SuccessCurve
    fast: FastP
    geo: GeomeanSpeedup
    operators: tuple[OperatorRow, ...]
    library: LibraryComparison
    cost: CostSummary
    migration: BottleneckMigration

    @property
    def trials(self) -> int:
        return len(self.outcomes)

    @property
    def correct(self) -> int:
        return sum(1 for o in self.outcomes if o.correct)

    def tables(self) -> dict[str, export.Table]:
        tables = [
            export.success_curve_table(self.curve), export.fast_p_table(self.fast), export.geomean_table(self.geo),
            export.operator_table(self.operators), export.library_table(self.library), export.cost_table(self.cost),
            export.migration_table(self.migration), export.outcomes_table(self.outcomes),
        ]
        return {t.name: t for t in tables}

    def charts(self) -> dict[str, dict[str, Any]]:
        return {
            "success_curve": export.success_curve_precisions_chart(self.curve),
            "fast_p": export.fast_p_chart([(precision_label(self.precision), self.fast)]),
            "operators": export.operator_chart(self.operators),
        }

    def migration_rows(self) -> tuple[MigrationRow, ...]:
        """The matrix as the page colours it: each cell's share of the largest one."""
        peak = max((n for row in self.migration.matrix for n in row), default=0) or 1
        labels = dict(Bottleneck.choices)
        return tuple(
            MigrationRow(labels.get(c, c), tuple(MigrationCell(n, n / peak) for n in self.migration.matrix[i]),
                         self.migration.before[i])
            for i, c in enumerate(self.migration.classes))

    def class_labels(self) -> tuple[str, ...]:
        labels = dict(Bottleneck.choices)
        return tuple(labels.get(c, c) for c in self.migration.classes)


def build_report(outcomes: Sequence[TaskOutcome], precision: str = ALL) -> ExperimentReport:
    """Every analysis over the trials of one precision (or all): failed and missing trials stay in."""
    chosen = tuple(_only(outcomes, precision))
    curve = success_curve(chosen)
    if precision != ALL:  # one precision: its series alone, named after it (it equals "all" of the subset)
        curve = SuccessCurve(curve.taus, (replace(curve.series[0], label=precision),))
    return ExperimentReport(
        precision=precision, outcomes=chosen, curve=curve, fast=fast_p(chosen), geo=geomean_speedup(chosen),
        operators=per_operator(chosen), library=library_comparison(chosen), cost=cost_summary(chosen),
        migration=bottleneck_migration(chosen),
    )


def experiment_report(experiment: Experiment, precision: str = ALL,
                      references: dict[tuple[str, str], LibraryReference] | None = None) -> ExperimentReport:
    return build_report(outcomes_for(experiment, references), precision)


# -------------------------------------------------------------------------------- several side by side


def column_label(experiment: Experiment) -> str:
    """Names need not be unique; the id keeps two columns apart."""
    return f"#{experiment.pk} {experiment.name}"


@dataclass(frozen=True)
class ComparisonReport:
    precision: str
    columns: tuple[ExperimentOutcomes, ...]  # already restricted to the precision
    ablation: AblationTable

    def tables(self) -> dict[str, export.Table]:
        return {"ablation": export.ablation_export_table(self.ablation)}

    def charts(self) -> dict[str, dict[str, Any]]:
        """The curves over the tasks every experiment covers, like the ablation table."""
        common = common_tasks(self.columns)
        restricted = [(c.label, [o for o in c.outcomes if o.task_id in common]) for c in self.columns]
        return {
            "success_curve": export.success_curve_chart([(label, success_curve(o)) for label, o in restricted]),
            "fast_p": export.fast_p_chart([(label, fast_p(o)) for label, o in restricted]),
        }


def build_comparison(columns: Sequence[ExperimentOutcomes], precision: str = ALL) -> ComparisonReport:
    chosen = tuple(replace(c, outcomes=tuple(_only(c.outcomes, precision))) for c in columns)
    return ComparisonReport(precision, chosen, ablation_table(chosen))


def comparison_report(experiments: Sequence[Experiment], precision: str = ALL,
                      references: dict[tuple[str, str], LibraryReference] | None = None) -> ComparisonReport:
    columns = [replace(experiment_outcomes(e, references), label=column_label(e)) for e in experiments]
    return build_comparison(columns, precision)


def report_json(tables: dict[str, export.Table], charts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The API's shape of a report: every table as export.to_json, and the chart data."""
    return {"tables": {name: export.to_json(t) for name, t in tables.items()}, "charts": charts}
