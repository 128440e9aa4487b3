"""Every analysis as a flat table (CSV or JSON) and the curves as kw-charts `lines` data.

A `Table` is what a page shows, what the CSV holds and what the JSON lists, so the three never drift
apart. Cells are plain scalars (str, int, float, bool, None); per-size lists are joined with ";".
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from apps.experiments.analysis import (
    AblationTable,
    BottleneckMigration,
    CostSummary,
    FastP,
    GeomeanSpeedup,
    LibraryComparison,
    OperatorRow,
    SuccessCurve,
    TaskOutcome,
)

Cell = str | int | float | bool | None


@dataclass(frozen=True)
class Table:
    name: str  # also the download's file name stem
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]

    def records(self) -> list[dict[str, Cell]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def _sizes(values: Sequence[float | None]) -> str:
    return ";".join("" if v is None else f"{v:g}" for v in values)


# ------------------------------------------------------------------------------------------- tables


def outcomes_table(outcomes: Sequence[TaskOutcome]) -> Table:
    """One row per trial: what every other table is computed from."""
    columns = ("task_id", "operator", "precision", "category", "seed", "status", "correct", "P", "speedup",
               "speedups", "baseline_class", "best_class", "reference_P", "tokens", "cost_usd", "run_id", "error")
    rows = tuple(
        (o.task_id, o.operator, o.precision, o.category, o.seed_index, o.status, o.correct, o.score, o.speedup,
         _sizes(o.speedups), o.baseline_class, o.best_class, o.reference_score, o.tokens, o.cost_usd, o.run_id,
         o.error)
        for o in outcomes
    )
    return Table("outcomes", columns, rows)


def success_curve_table(curve: SuccessCurve) -> Table:
    rows = tuple((tau, s.label, s.counts[n], s.total, s.rates[n])
                 for s in curve.series for n, tau in enumerate(curve.taus))
    return Table("success_curve", ("tau", "precision", "successes", "trials", "rate"), rows)


def fast_p_table(fast: FastP) -> Table:
    rows = tuple((p, fast.counts[n], fast.total, fast.values[n]) for n, p in enumerate(fast.ps))
    return Table("fast_p", ("p", "fast", "trials", "fast_p"), rows)


def geomean_table(geo: GeomeanSpeedup) -> Table:
    return Table("geomean_speedup", ("correct", "trials", "geomean_speedup"), ((geo.correct, geo.total, geo.value),))


def library_table(comparison: LibraryComparison) -> Table:
    columns = ("task_id", "operator", "precision", "reference_P", "best_P", "expert_relative", "trials", "correct",
               "speedups", "reference_speedups")
    rows = tuple((r.task_id, r.operator, r.precision, r.reference_score, r.best_score, r.expert_relative, r.trials,
                  r.correct, _sizes(r.speedups), _sizes(r.reference_speedups)) for r in comparison.rows)
    return Table("library_comparison", columns, rows)


def operator_table(rows: Sequence[OperatorRow]) -> Table:
    """Figure 5's data: each task's best correct P (and speedup) beside its library reference's P."""
    columns = ("task_id", "operator", "precision", "trials", "correct", "best_P", "best_speedup", "reference_P",
               "expert_relative")
    return Table("operators", columns, tuple(
        (r.task_id, r.operator, r.precision, r.trials, r.correct, r.best_score, r.best_speedup, r.reference_score,
         r.expert_relative) for r in rows))


def cost_table(summary: CostSummary) -> Table:
    """The whole pipeline first ("all"), then each agent role."""
    rows = [("all", summary.trials, summary.tokens, summary.cost_usd, summary.mean_tokens, summary.mean_cost_usd)]
    rows += [(r.role, summary.trials, r.tokens, r.cost_usd, r.mean_tokens, r.mean_cost_usd) for r in summary.roles]
    return Table("cost", ("role", "trials", "tokens", "cost_usd", "mean_tokens", "mean_cost_usd"), tuple(rows))


def migration_table(migration: BottleneckMigration) -> Table:
    """Rows: the baseline's class; columns: the best candidate's class; last row and column: totals."""
    rows = [(c, *migration.matrix[i], migration.before[i]) for i, c in enumerate(migration.classes)]
    rows.append(("total", *migration.after, migration.total))
    return Table("bottleneck_migration", ("baseline \\ best", *migration.classes, "total"), tuple(rows))


def ablation_export_table(table: AblationTable) -> Table:
    rows = [(r.metric, *r.values) for r in table.rows]
    rows.append(("trials dropped (task not in every experiment)", *table.dropped))
    return Table("ablation", ("metric", *table.columns), tuple(rows))


# ------------------------------------------------------------------------------------------ formats


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: Cell) -> Cell:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value  # a name like "=cmd|..." must not become a spreadsheet formula
    return value


def to_csv(table: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows([_csv_cell(v) for v in row] for row in table.rows)
    return out.getvalue()


def to_json(table: Table) -> dict[str, Any]:
    """{"name", "columns", "rows": [{column: value}]}: JSON-ready (floats stay numbers, None is null)."""
    return {"name": table.name, "columns": list(table.columns), "rows": table.records()}


# ------------------------------------------------------------------------------------------- charts


def success_curve_chart(curves: Sequence[tuple[str, SuccessCurve]], precision: str = "all") -> dict[str, Any]:
    """kw-charts `lines` data: success rate (%) against tau, one line per labelled curve, for one precision
    ("all" for every precision together); a curve without that precision has no line. The thresholds double,
    so they are drawn as evenly spaced categories, on a 0-100 % axis."""
    taus = curves[0][1].taus if curves else ()
    series = []
    for label, curve in curves:
        found = curve.get(precision)
        if found is not None:
            series.append({"label": label, "values": [round(r * 100, 4) for r in found.rates]})
    return {"x": list(taus), "xlabel": "speedup threshold τ", "ylabel": "success rate (%)", "logx": False,
            "categorical": True, "yInclude": [0, 100], "series": series}


def fast_p_chart(results: Sequence[tuple[str, FastP]]) -> dict[str, Any]:
    """kw-charts `lines` data: fast_p (%) against p, one line per labelled result."""
    ps = results[0][1].ps if results else ()
    return {"x": list(ps), "xlabel": "speedup threshold p", "ylabel": "fast_p (%)", "logx": False,
            "yInclude": [0, 100], "series": [{"label": label, "values": [round(v * 100, 4) for v in fast.values]}
                       for label, fast in results]}


def success_curve_precisions_chart(curve: SuccessCurve) -> dict[str, Any]:
    """kw-charts `lines` data for one experiment: one line per series of the curve ("all", then each
    precision), as in the paper's Figure 4."""
    return {"x": list(curve.taus), "xlabel": "speedup threshold τ", "ylabel": "success rate (%)", "logx": False,
            "categorical": True, "yInclude": [0, 100],
            "series": [{"label": s.label, "values": [round(r * 100, 4) for r in s.rates]} for s in curve.series]}


def operator_chart(rows: Sequence[OperatorRow]) -> dict[str, Any]:
    """kw-charts `operators` data: per task, the best candidate's P and the library reference's P (None where
    there is none, or no correct candidate)."""
    series = [{"label": "best candidate P", "values": [r.best_score for r in rows]}]
    if any(r.reference_score is not None for r in rows):
        series.append({"label": "library reference P", "values": [r.reference_score for r in rows]})
    return {"labels": [f"{r.operator} {r.precision}" for r in rows], "ylabel": "speedup over the naive baseline (P)",
            "series": series}
