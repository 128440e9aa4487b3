"""What the experiment pages and the API show (apps/experiments/reports.py), the per-operator rows of Figure 5,
and the server-drawn SVG charts, on the hand-checked data set SIX of test_experiment_analysis (no database)."""

import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from apps.experiments import svg
from apps.experiments.analysis import TAUS, ExperimentOutcomes, per_operator
from apps.experiments.reports import build_comparison, build_report, parse_precision
from tests.web.test_experiment_analysis import CB, MB, ML, SIX, failed, ok

NS = "{http://www.w3.org/2000/svg}"


# ------------------------------------------------------------------------------------------ per operator


def test_per_operator_lists_every_task_with_its_best_seed_and_the_reference():
    outcomes = [*SIX, ok(1, "a", "fp32", 3.0, (3.0,), seed_index=1)]  # a second, better seed of task 1
    refs = {1: 5.0, 2: 0.5}
    outcomes = [replace(o, reference_score=refs.get(o.task_id)) for o in outcomes]
    rows = {(r.operator, r.precision): r for r in per_operator(outcomes)}
    assert [(r.operator, r.precision) for r in per_operator(outcomes)] == [
        ("a", "bf16"), ("a", "fp32"), ("b", "bf16"), ("b", "fp32"), ("c", "bf16"), ("c", "fp32")]
    a32 = rows[("a", "fp32")]
    assert (a32.trials, a32.correct, a32.best_score, a32.best_speedup, a32.reference_score) == (2, 2, 3.0, 3.0, 5.0)
    assert a32.expert_relative == pytest.approx(0.6)
    assert rows[("b", "fp32")].expert_relative == pytest.approx(2.0)  # P 1.0 against a slower reference
    assert rows[("a", "bf16")].expert_relative is None  # no reference
    c32 = rows[("c", "fp32")]
    assert (c32.trials, c32.correct, c32.best_score, c32.best_speedup) == (1, 0, None, None)
    assert rows[("c", "bf16")].best_score is None  # the missing trial


# ----------------------------------------------------------------------------------------------- reports


def test_parse_precision_takes_all_or_a_precision_and_nothing_else():
    assert [parse_precision(v) for v in (None, "", "all", "FP32", " bf16 ")] == ["all", "all", "all", "fp32", "bf16"]
    assert parse_precision("fp16") is None and parse_precision("all;drop") is None


def test_a_report_for_one_precision_restricts_every_analysis_to_its_trials():
    report = build_report(SIX, "fp32")
    assert (report.trials, report.correct) == (3, 2)
    assert [(s.label, s.total, s.counts) for s in report.curve.series] == [("fp32", 3, (2, 1, 1, 0, 0, 0, 0))]
    assert (report.fast.total, report.fast.counts) == (3, (2, 2, 2, 1, 1, 1))  # speedups 4 and 1
    assert report.geo.value == pytest.approx(2.0)
    assert (report.cost.trials, report.cost.tokens) == (3, 3500)
    assert report.migration.matrix == ((0, 0, 0), (1, 0, 1), (0, 0, 0))
    assert [o.task_id for o in report.outcomes] == [1, 2, 3]


def test_a_report_over_all_precisions_has_every_table_and_one_curve_per_precision():
    report = build_report(SIX)
    assert list(report.tables()) == ["success_curve", "fast_p", "geomean_speedup", "operators",
                                     "library_comparison", "cost", "bottleneck_migration", "outcomes"]
    charts = report.charts()
    assert [s["label"] for s in charts["success_curve"]["series"]] == ["all", "bf16", "fp32"]
    assert charts["success_curve"]["series"][0]["values"][:2] == pytest.approx([400 / 6, 200 / 6], abs=1e-4)
    assert charts["fast_p"]["series"][0]["label"] == "all precisions"
    assert charts["operators"]["labels"][:2] == ["a bf16", "a fp32"]
    assert charts["operators"]["series"] == [{"label": "best candidate P",
                                              "values": [8.0, 2.5, 0.8, 1.0, None, None]}]  # no references


def test_the_migration_matrix_is_shaded_by_each_cell_against_the_largest():
    rows = build_report([ok(1, "a", "fp32", 2.0, (2.0,), ML, CB), ok(2, "b", "fp32", 2.0, (2.0,), ML, CB),
                         ok(3, "c", "fp32", 2.0, (2.0,), MB, MB)]).migration_rows()
    assert [r.label for r in rows] == ["Compute bound", "Memory latency bound", "Memory bandwidth bound"]
    latency = rows[1]
    assert [(c.count, c.shade) for c in latency.cells] == [(2, 1.0), (0, 0.0), (0, 0.0)] and latency.total == 2
    assert rows[2].cells[2].shade == 0.5
    assert latency.cells[0].background == "rgba(11, 107, 203, 0.85)" and latency.cells[1].background == "transparent"
    assert latency.cells[0].shade_class == "shade-10" and latency.cells[1].shade_class == ""


def test_a_comparison_draws_its_curves_over_the_tasks_every_experiment_covers():
    other = (failed(1, "a", "fp32"), ok(2, "b", "fp32", 1.5, (1.5,)), ok(7, "x", "fp32", 9.0, (9.0,)))
    comparison = build_comparison([ExperimentOutcomes("Full", SIX), ExperimentOutcomes("N.D.", other)])
    assert comparison.ablation.tasks == 2 and comparison.ablation.dropped == (4, 1)
    curves = comparison.charts()["success_curve"]["series"]
    # tasks 1 and 2 only: Full has P 2.5 and 1.0, N.D. a failure and 1.5
    assert curves[0] == {"label": "Full", "values": pytest.approx([100.0, 50.0, 50.0, 0, 0, 0, 0])}
    assert curves[1] == {"label": "N.D.", "values": pytest.approx([50.0, 50.0, 0, 0, 0, 0, 0])}
    bf16 = build_comparison([ExperimentOutcomes("Full", SIX), ExperimentOutcomes("N.D.", other)], "bf16")
    assert bf16.ablation.tasks == 0  # N.D. ran no bf16 task: nothing is shared
    assert list(bf16.tables()) == ["ablation"]


# ------------------------------------------------------------------------------------------------- SVG


def test_nice_ticks_and_labels():
    assert svg.nice_ticks(0, 100) == [0, 20, 40, 60, 80, 100]
    assert svg.nice_ticks(0, 8.64) == [0, 2, 4, 6, 8]
    assert svg.nice_ticks(3, 3) == [3]
    assert [svg.fmt(v) for v in (0, 0.5, 2.0, 1 / 3, 123456.0)] == ["0", "0.5", "2", "0.3333", "1.2e+05"]


def test_the_success_curve_svg_draws_one_line_per_series_on_a_0_to_100_scale():
    markup = svg.lines_svg(build_report(SIX).charts()["success_curve"], "Success")
    root = ET.fromstring(markup)
    lines = root.findall(f"{NS}polyline")
    assert len(lines) == 3 and len(root.findall(f"{NS}circle")) == 3 * len(TAUS)
    # "all" starts at 4/6 = 66.7 %: y = top + (1 - 0.667) * height on the fixed 0-100 axis
    first = [tuple(map(float, p.split(","))) for p in lines[0].get("points").split()]
    assert first[0] == (pytest.approx(svg.LEFT), pytest.approx(svg.TOP + svg.PLOT_HEIGHT / 3, abs=0.1))
    assert first[-1][1] == pytest.approx(svg.TOP + svg.PLOT_HEIGHT)  # 0 % at τ = 32
    steps = {round(b[0] - a[0], 1) for a, b in zip(first, first[1:], strict=False)}
    assert len(steps) == 1  # the doubling thresholds are evenly spaced categories, as in the browser
    texts = [t.text for t in root.iter(f"{NS}text")]
    assert "100" in texts and "32" in texts and "all" in texts and "success rate (%)" in texts


def test_a_gap_breaks_a_line_and_bars_skip_missing_values():
    data = {"x": [0, 1, 2, 3], "ylabel": "P", "series": [{"label": "s", "values": [1, 2, None, 4]}]}
    root = ET.fromstring(svg.lines_svg(data, "t"))
    assert len(root.findall(f"{NS}polyline")) == 1 and len(root.findall(f"{NS}circle")) == 3  # lone last point
    bars = {"labels": ["a", "b", "c"], "ylabel": "P", "series": [{"label": "best", "values": [2.0, None, 0.5]},
                                                                 {"label": "ref", "values": [None, 3.0, None]}]}
    root = ET.fromstring(svg.bars_svg(bars, "t"))
    drawn = [r.find(f"{NS}title").text for r in root.findall(f"{NS}rect") if r.find(f"{NS}title") is not None]
    assert drawn == ["a · best: 2", "c · best: 0.5", "b · ref: 3"]


def test_every_text_in_an_svg_is_escaped():
    evil = '</text><script>alert(1)</script><text x="'
    data = {"x": [0, 1], "xlabel": evil, "ylabel": evil, "series": [{"label": evil, "values": [1, 2]}]}
    for markup in (svg.lines_svg(data, evil),
                   svg.bars_svg({"labels": [evil], "ylabel": evil, "series": [{"label": evil, "values": [1]}]}, evil)):
        root = ET.fromstring(markup)  # still well-formed
        assert "<script" not in markup and not list(root.iter(f"{NS}script"))
        assert evil in [t.text for t in root.iter(f"{NS}text")]  # shown as text, never parsed as markup
        assert root.find(f"{NS}title").text == evil and root.get("aria-label") == evil
