"""Every experiment table as CSV and JSON, and the curves as kw-charts data (on the hand-checked data set)."""

import csv
import io
import json

import pytest

from apps.experiments.analysis import (
    ExperimentOutcomes,
    ablation_table,
    bottleneck_migration,
    cost_summary,
    fast_p,
    geomean_speedup,
    library_comparison,
    success_curve,
)
from apps.experiments.export import (
    Table,
    ablation_export_table,
    cost_table,
    fast_p_chart,
    fast_p_table,
    geomean_table,
    library_table,
    migration_table,
    outcomes_table,
    success_curve_chart,
    success_curve_table,
    to_csv,
    to_json,
)
from tests.web.test_experiment_analysis import CB, ML, SIX, failed, ok


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_the_success_curve_exports_one_row_per_precision_and_tau():
    table = success_curve_table(success_curve(SIX, (0, 1, 8)))
    assert table.columns == ("tau", "precision", "successes", "trials", "rate")
    assert table.rows[:3] == ((0, "all", 4, 6, 4 / 6), (1, "all", 2, 6, 2 / 6), (8, "all", 0, 6, 0.0))
    assert (1, "fp32", 1, 3, 1 / 3) in table.rows and len(table.rows) == 9
    rows = parse(to_csv(table))
    assert rows[0] == ["tau", "precision", "successes", "trials", "rate"]
    assert rows[2] == ["1", "all", "2", "6", str(2 / 6)]


def test_fast_p_and_the_geomean_export_counts_and_fractions():
    table = fast_p_table(fast_p(SIX))
    assert table.rows == ((0, 4, 6, 4 / 6), (0.5, 4, 6, 4 / 6), (0.8, 3, 6, 0.5), (1, 2, 6, 2 / 6),
                          (1.5, 2, 6, 2 / 6), (2, 2, 6, 2 / 6))
    assert to_json(table)["rows"][2] == {"p": 0.8, "fast": 3, "trials": 6, "fast_p": 0.5}
    geo = geomean_table(geomean_speedup(SIX))
    assert geo.columns == ("correct", "trials", "geomean_speedup")
    assert geo.rows[0][:2] == (4, 6) and geo.rows[0][2] == pytest.approx(25.6 ** 0.25)
    empty = geomean_table(geomean_speedup([failed(1, "a", "fp32")]))
    assert parse(to_csv(empty))[1] == ["0", "1", ""]  # no geomean: an empty cell, null in JSON
    assert to_json(empty)["rows"] == [{"correct": 0, "trials": 1, "geomean_speedup": None}]


def test_the_library_comparison_exports_per_size_speedups_joined():
    outcomes = [ok(1, "a", "fp32", 2.5, (2.0, 8.0), reference_score=5.0, reference_speedups=(3.0, None))]
    table = library_table(library_comparison(outcomes))
    record = table.records()[0]
    assert record == {"task_id": 1, "operator": "a", "precision": "fp32", "reference_P": 5.0, "best_P": 2.5,
                      "expert_relative": 0.5, "trials": 1, "correct": 1, "speedups": "2;8",
                      "reference_speedups": "3;"}


def test_the_cost_table_has_the_whole_pipeline_then_each_role():
    table = cost_table(cost_summary(SIX))
    assert [r[0] for r in table.rows] == ["all", "planner", "coder", "debug"]
    assert table.rows[0][:3] == ("all", 5, 5000) and table.rows[0][4] == 1000
    assert table.records()[1]["mean_tokens"] == 380


def test_the_migration_matrix_exports_with_totals():
    table = migration_table(bottleneck_migration(SIX))
    assert table.columns == ("baseline \\ best", CB, ML, "memory_bandwidth_bound", "total")
    assert table.rows == ((CB, 1, 0, 0, 1), (ML, 1, 0, 1, 2), ("memory_bandwidth_bound", 0, 0, 1, 1),
                          ("total", 2, 0, 2, 4))


def test_the_ablation_table_exports_one_column_per_experiment():
    other = (failed(1, "a", "fp32"), ok(2, "b", "fp32", 1.5, (1.5,)), ok(3, "c", "fp32", 3.0, (3.0,)))
    table = ablation_export_table(ablation_table([ExperimentOutcomes("Full", SIX, {"debug rounds D": "3"}),
                                                  ExperimentOutcomes("N.D.", other, {"debug rounds D": "0"})]))
    assert table.columns == ("metric", "Full", "N.D.")
    assert table.rows[0] == ("debug rounds D", "3", "0")
    assert table.rows[-1] == ("trials dropped (task not in every experiment)", 3, 0)
    rows = {r[0]: r[1:] for r in parse(to_csv(table))[1:]}
    assert rows["success P>1"] == [str(1 / 3), str(2 / 3)]


def test_the_outcomes_table_has_one_row_per_trial_with_its_error():
    table = outcomes_table(SIX)
    records = table.records()
    assert len(records) == 6
    assert records[0]["speedups"] == "2;8" and records[0]["speedup"] == pytest.approx(4.0)
    assert records[2]["status"] == "failed" and records[2]["error"].startswith("No NVIDIA GPU")
    assert records[5]["status"] == "missing" and records[5]["P"] is None
    json.dumps(to_json(table))  # JSON-ready as it is


def test_csv_cells_that_would_be_spreadsheet_formulas_are_defused():
    table = Table("t", ("name", "value"), (("=HYPERLINK(\"http://x\")", -1.5), ("+1", None), ("ok", True)))
    assert parse(to_csv(table))[1:] == [["'=HYPERLINK(\"http://x\")", "-1.5"], ["'+1", ""], ["ok", "True"]]


def test_curves_become_kw_charts_lines_data_per_precision():
    full, nd = success_curve(SIX, (0, 1, 2)), success_curve([ok(9, "a", "fp32", 1.5, (1.5,))], (0, 1, 2))
    chart = success_curve_chart([("Full", full), ("N.D.", nd)], "bf16")
    assert chart["x"] == [0, 1, 2] and chart["logx"] is False
    assert chart["series"] == [{"label": "Full", "values": [pytest.approx(66.6667), pytest.approx(33.3333),
                                                           pytest.approx(33.3333)]}]  # N.D. has no bf16
    assert success_curve_chart([("N.D.", nd)])["series"][0]["values"] == [100.0, 100.0, 0.0]
    data = fast_p_chart([("Full", fast_p(SIX, (0, 1)))])
    assert data["x"] == [0, 1] and data["series"][0]["values"] == [pytest.approx(66.6667), pytest.approx(33.3333)]
    assert success_curve_chart([]) == {"x": [], "xlabel": "speedup threshold τ", "ylabel": "success rate (%)",
                                       "logx": False, "categorical": True, "yInclude": [0, 100], "series": []}
