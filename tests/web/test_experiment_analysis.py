"""The experiment analyses on constructed outcomes, against numbers worked out by hand.

The main data set (SIX) has six tasks, three per precision:

    task  prec  status     P     per-size speedups  speedup  baseline→best  tokens  cost
    1 a   fp32  succeeded  2.5   (2, 8)             4        ML → CB        1000    0.10
    2 b   fp32  succeeded  1.0   (1,)               1        ML → MB        2000    0.20
    3 c   fp32  failed     -     -                  -        CB             500     0.05
    4 a   bf16  succeeded  8.0   (4, 16)            8        MB → MB        1500    0.15
    5 b   bf16  succeeded  0.8   (0.8,)             0.8      CB → CB        0       0
    6 c   bf16  missing    -     -                  -        -              -       -

Task 2 sits exactly at τ = 1 and p = 1, task 4 at τ = 8, task 5 at p = 0.8: none of them counts there.
"""

import math

import pytest

from apps.experiments.analysis import (
    PS,
    TAUS,
    ExperimentOutcomes,
    TaskOutcome,
    ablation_table,
    bottleneck_migration,
    cost_summary,
    dominant_class,
    fast_p,
    geomean,
    geomean_speedup,
    library_comparison,
    missing_outcome,
    per_operator,
    success_curve,
)

CB, ML, MB = "compute_bound", "memory_latency_bound", "memory_bandwidth_bound"


def ok(task_id, operator, precision, score, speedups, before="", after="", **kw):
    return TaskOutcome(task_id, operator, precision, correct=True, score=score, speedups=speedups,
                       baseline_class=before, best_class=after, **kw)


def failed(task_id, operator, precision, **kw):
    return TaskOutcome(task_id, operator, precision, status="failed", error="No NVIDIA GPU on worker host", **kw)


SIX = (
    ok(1, "a", "fp32", 2.5, (2.0, 8.0), ML, CB, tokens=1000, cost_usd=0.10,
       tokens_by_role={"planner": 400, "coder": 600}, cost_by_role={"planner": 0.04, "coder": 0.06}),
    ok(2, "b", "fp32", 1.0, (1.0,), ML, MB, tokens=2000, cost_usd=0.20,
       tokens_by_role={"coder": 2000}, cost_by_role={"coder": 0.20}),
    failed(3, "c", "fp32", baseline_class=CB, tokens=500, cost_usd=0.05,
           tokens_by_role={"debug": 500}, cost_by_role={"debug": 0.05}),
    ok(4, "a", "bf16", 8.0, (4.0, 16.0), MB, MB, tokens=1500, cost_usd=0.15,
       tokens_by_role={"planner": 1500}, cost_by_role={"planner": 0.15}),
    ok(5, "b", "bf16", 0.8, (0.8,), CB, CB),
    missing_outcome(6, "c", "bf16"),
)


# --------------------------------------------------------------------------------- cumulative success


def test_success_curve_counts_p_strictly_above_each_tau_over_every_task():
    curve = success_curve(SIX, TAUS)
    assert curve.taus == (0, 1, 2, 4, 8, 16, 32)
    every = curve.get("all")
    assert every.total == 6
    assert every.counts == (4, 2, 2, 1, 0, 0, 0)
    assert every.rates == pytest.approx((4 / 6, 2 / 6, 2 / 6, 1 / 6, 0, 0, 0))


def test_success_curve_splits_by_precision_with_failed_and_missing_tasks_in_the_denominator():
    curve = success_curve(SIX, TAUS)
    assert [s.label for s in curve.series] == ["all", "bf16", "fp32"]
    assert (curve.get("fp32").total, curve.get("fp32").counts) == (3, (2, 1, 1, 0, 0, 0, 0))
    assert (curve.get("bf16").total, curve.get("bf16").counts) == (3, (2, 1, 1, 1, 0, 0, 0))


def test_a_score_exactly_at_the_threshold_is_not_a_success():
    at_one = [ok(1, "a", "fp32", 1.0, (1.0,)), ok(2, "b", "fp32", 1.0000001, (1.0000001,))]
    assert success_curve(at_one, (0, 1)).get("all").counts == (2, 1)


def test_an_incorrect_outcome_never_succeeds_even_with_a_score():
    stale = TaskOutcome(1, "a", "fp32", status="succeeded", correct=False, score=5.0, speedups=(5.0,))
    assert success_curve([stale], (0,)).get("all").counts == (0,)
    assert fast_p([stale], (0,)).counts == (0,)


def test_all_failed_gives_zero_everywhere_and_no_geomean():
    outcomes = [failed(1, "a", "fp32"), failed(2, "b", "bf16"), missing_outcome(3, "c", "fp32")]
    assert success_curve(outcomes).get("all").rates == (0.0,) * len(TAUS)
    assert fast_p(outcomes).values == (0.0,) * len(PS)
    geo = geomean_speedup(outcomes)
    assert (geo.value, geo.correct, geo.total) == (None, 0, 3)
    assert bottleneck_migration(outcomes).total == 0


def test_no_outcomes_at_all_divides_by_nothing():
    assert success_curve([]).series[0].rates == (0.0,) * len(TAUS)
    assert fast_p([]).values == (0.0,) * len(PS)
    assert cost_summary([]).mean_cost_usd == 0.0
    assert library_comparison([]).mean_expert_relative is None


# -------------------------------------------------------------------------------------------- fast_p


def test_fast_p_is_correct_and_speedup_strictly_above_p_over_all_tasks():
    fast = fast_p(SIX, PS)
    assert fast.ps == (0, 0.5, 0.8, 1, 1.5, 2)
    assert fast.total == 6
    # speedups 4, 1, 8, 0.8: 0.8 is not > 0.8 and 1 is not > 1
    assert fast.counts == (4, 4, 3, 2, 2, 2)
    assert fast.at(0.8) == pytest.approx(0.5)
    assert fast.at(0) == pytest.approx(4 / 6)  # fast_0 is the correctness rate


def test_fast_p_counts_tasks_without_an_outcome_as_failures():
    present = [o for o in SIX if o.task_id != 6]  # no outcome at all for task 6
    assert fast_p(present, PS).total == 5
    fast = fast_p(present, PS, all_task_ids=[1, 2, 3, 4, 5, 6])
    assert (fast.total, fast.counts) == (6, (4, 4, 3, 2, 2, 2))


def test_fast_p_over_given_tasks_ignores_other_tasks_and_counts_every_seed():
    outcomes = [ok(1, "a", "fp32", 2.0, (2.0,)), ok(1, "a", "fp32", 3.0, (3.0,), seed_index=1),
                ok(99, "z", "fp32", 9.0, (9.0,))]
    fast = fast_p(outcomes, (1, 2.5), all_task_ids=[1, 2], seeds=2)
    assert fast.total == 4  # tasks 1 and 2, seeds 0 and 1; task 99 is not part of the experiment
    assert fast.counts == (2, 1)


def test_the_speedup_of_a_task_is_the_geometric_mean_over_its_sizes_or_p_without_sizes():
    assert ok(1, "a", "fp32", 2.5, (2.0, 8.0)).speedup == pytest.approx(4.0)
    assert ok(1, "a", "fp32", 2.5, (2.0, None, 8.0)).speedup == pytest.approx(4.0)
    assert ok(1, "a", "fp32", 2.5, ()).speedup == 2.5
    assert failed(1, "a", "fp32").speedup is None


def test_geomean_keeps_equal_values_exact():
    assert geomean([0.8]) == 0.8
    assert geomean([1.1, 1.1, 1.1]) == 1.1
    assert geomean([]) is None and geomean([0.0, -1.0]) is None


def test_geomean_speedup_is_over_correct_tasks_only():
    geo = geomean_speedup(SIX)
    assert (geo.correct, geo.total) == (4, 6)
    assert geo.value == pytest.approx((4 * 1 * 8 * 0.8) ** 0.25)  # 25.6 ** 0.25 = 2.2494
    assert geo.value == pytest.approx(2.24936, abs=1e-5)


# ------------------------------------------------------------------------------------- library references


def test_library_comparison_divides_the_best_p_by_the_reference_p_and_gives_failures_zero():
    outcomes = [
        ok(1, "a", "fp32", 2.5, (2.0, 8.0), reference_score=5.0, reference_speedups=(3.0, 6.0)),
        ok(1, "a", "fp32", 3.0, (2.5, 9.0), seed_index=1, reference_score=5.0, reference_speedups=(3.0, 6.0)),
        failed(3, "c", "fp32", reference_score=2.0),
        ok(4, "a", "bf16", 8.0, (4.0, 16.0), reference_score=4.0),
        ok(5, "b", "bf16", 0.8, (0.8,)),  # no reference: not in the comparison
    ]
    comparison = library_comparison(outcomes)
    rows = {(r.operator, r.precision): r for r in comparison.rows}
    assert set(rows) == {("a", "fp32"), ("c", "fp32"), ("a", "bf16")}
    a32 = rows[("a", "fp32")]
    assert (a32.best_score, a32.trials, a32.correct, a32.speedups) == (3.0, 2, 2, (2.5, 9.0))  # best seed
    assert a32.reference_speedups == (3.0, 6.0)
    assert a32.expert_relative == pytest.approx(0.6)
    assert rows[("c", "fp32")].expert_relative == 0.0 and rows[("c", "fp32")].best_score is None
    assert rows[("a", "bf16")].expert_relative == pytest.approx(2.0)
    assert comparison.mean_expert_relative == pytest.approx((0.6 + 0.0 + 2.0) / 3)
    assert comparison.beats_reference == 1


# ---------------------------------------------------------------------------------------------- cost


def test_cost_summary_averages_over_the_tasks_that_ran_overall_and_per_role():
    summary = cost_summary(SIX)
    assert summary.trials == 5  # the missing task cost nothing and is not averaged over
    assert summary.tokens == 5000 and summary.cost_usd == pytest.approx(0.50)
    assert summary.mean_tokens == 1000 and summary.mean_cost_usd == pytest.approx(0.10)
    roles = {r.role: r for r in summary.roles}
    assert [r.role for r in summary.roles] == ["planner", "coder", "debug"]  # pipeline order, unused roles left out
    assert (roles["planner"].tokens, roles["planner"].mean_tokens) == (1900, 380)
    assert roles["planner"].cost_usd == pytest.approx(0.19) and roles["planner"].mean_cost_usd == pytest.approx(0.038)
    assert (roles["coder"].tokens, roles["coder"].mean_tokens) == (2600, 520)
    assert roles["coder"].mean_cost_usd == pytest.approx(0.052)
    assert (roles["debug"].tokens, roles["debug"].mean_cost_usd) == (500, pytest.approx(0.01))


# ---------------------------------------------------------------------------------------- bottlenecks


def test_bottleneck_migration_counts_baseline_class_to_best_class_over_correct_tasks():
    migration = bottleneck_migration(SIX)
    assert migration.classes == (CB, ML, MB)
    assert migration.matrix == ((1, 0, 0),  # CB → CB (task 5)
                                (1, 0, 1),  # ML → CB (task 1), ML → MB (task 2)
                                (0, 0, 1))  # MB → MB (task 4); task 3 failed, task 6 missing
    assert migration.before == (1, 2, 1) and migration.after == (2, 0, 2)
    assert (migration.total, migration.stayed) == (4, 2)


def test_bottleneck_migration_leaves_out_unknown_classes():
    outcomes = [ok(1, "a", "fp32", 2.0, (2.0,), "unknown", CB), ok(2, "b", "fp32", 2.0, (2.0,), ML, "")]
    assert bottleneck_migration(outcomes).total == 0


@pytest.mark.parametrize(("profiles", "expected"), [
    ([(0, ML), (1, ML), (2, CB)], ML),
    ([(0, CB), (1, ML)], ML),  # a tie goes to the class of the largest size
    ([(0, ML), (1, CB), (1, ML), (2, CB)], CB),
    ([(0, "unknown"), (1, "unknown"), (2, MB)], MB),  # unknown only when nothing else is known
    ([(0, "unknown")], "unknown"),
    ([], ""),
])
def test_the_class_of_a_turn_is_its_most_common_class_over_sizes(profiles, expected):
    assert dominant_class(profiles) == expected


# ------------------------------------------------------------------------------------------- ablation


def test_ablation_compares_the_same_tasks_under_each_configuration():
    other = (
        failed(1, "a", "fp32", tokens=100, cost_usd=0.01),
        ok(2, "b", "fp32", 1.5, (1.5,), tokens=300, cost_usd=0.03),
        ok(3, "c", "fp32", 3.0, (3.0,), tokens=200, cost_usd=0.02),
        ok(7, "x", "fp32", 9.0, (9.0,)),  # a task the first experiment does not have
    )
    table = ablation_table([ExperimentOutcomes("Full", SIX, {"rounds R": "3", "debug rounds D": "3"}),
                            ExperimentOutcomes("N.D.", other, {"rounds R": "3", "debug rounds D": "0"})])
    assert table.columns == ("Full", "N.D.")
    assert table.tasks == 3 and table.dropped == (3, 1)  # tasks 1-3 in both; 4, 5, 6 and 7 left out
    assert table.row("debug rounds D").values == ("3", "0")
    assert table.row("trials").values == (3, 3)
    # Full on tasks 1-3: P 2.5, 1.0, failed. N.D.: failed, 1.5, 3.0.
    assert table.row("success P>0").values == pytest.approx((2 / 3, 2 / 3))
    assert table.row("success P>1").values == pytest.approx((1 / 3, 2 / 3))
    assert table.row("success P>2").values == pytest.approx((1 / 3, 1 / 3))
    assert table.row("success P>4").values == (0.0, 0.0)
    assert table.row("fast_1").values == pytest.approx((1 / 3, 2 / 3))
    assert table.row("fast_1.5").values == pytest.approx((1 / 3, 1 / 3))
    assert table.row("geomean speedup").values == pytest.approx((2.0, math.sqrt(4.5)))  # √(4·1), √(1.5·3)
    assert table.row("mean cost USD").values == pytest.approx((0.35 / 3, 0.06 / 3))
    assert table.row("mean tokens").values == pytest.approx((3500 / 3, 200))
    assert [r.metric for r in table.rows][:3] == ["rounds R", "debug rounds D", "trials"]


def test_ablation_of_nothing_is_an_empty_table():
    table = ablation_table([])
    assert (table.columns, table.tasks, table.dropped) == ((), 0, ())


# ------------------------------------------------------------------------------------------ more edge cases


def test_all_failed_still_costs_what_the_runs_spent_and_gets_no_expert_credit():
    outcomes = [failed(1, "a", "fp32", tokens=400, cost_usd=0.04, tokens_by_role={"planner": 400},
                       cost_by_role={"planner": 0.04}, reference_score=2.0),
                failed(2, "b", "fp32", tokens=0, cost_usd=0.0, reference_score=4.0),  # stopped before any call
                missing_outcome(3, "c", "fp32", reference_score=1.0)]
    cost = cost_summary(outcomes)
    assert (cost.trials, cost.tokens, cost.mean_tokens) == (2, 400, 200)  # the missing trial is not averaged
    assert cost.mean_cost_usd == pytest.approx(0.02) and [r.role for r in cost.roles] == ["planner"]
    comparison = library_comparison(outcomes)
    assert [r.expert_relative for r in comparison.rows] == [0.0, 0.0, 0.0]
    assert (comparison.mean_expert_relative, comparison.beats_reference) == (0.0, 0)
    assert [(r.correct, r.best_score, r.expert_relative) for r in per_operator(outcomes)] == [
        (0, None, 0.0), (0, None, 0.0), (0, None, 0.0)]


def test_matching_the_library_exactly_is_not_beating_it():
    outcomes = [ok(1, "a", "fp32", 3.0, (3.0,), reference_score=3.0), ok(2, "b", "fp32", 3.3, (3.3,),
                                                                          reference_score=3.0)]
    comparison = library_comparison(outcomes)
    assert [r.expert_relative for r in comparison.rows] == pytest.approx([1.0, 1.1])
    assert comparison.beats_reference == 1


def test_a_tie_at_every_threshold_counts_below_it_only():
    # P and speedup exactly at each tau / p: success strictly above, so each counts up to the threshold before
    at = [ok(n, f"t{n}", "fp32", float(t), (float(t),)) for n, t in enumerate((1, 2, 4), start=1)]
    assert success_curve(at, (0, 1, 2, 4)).get("all").counts == (3, 2, 1, 0)
    assert fast_p(at, (0, 1, 2, 4)).counts == (3, 2, 1, 0)


def test_the_missing_seed_of_a_task_is_a_failure_in_every_rate():
    outcomes = [ok(1, "a", "fp32", 2.0, (2.0,)), missing_outcome(1, "a", "fp32", seed_index=1)]
    assert success_curve(outcomes, (0,)).get("all").rates == (0.5,)
    assert fast_p(outcomes, (1,)).values == (0.5,)
    assert fast_p(outcomes[:1], (1,), all_task_ids=[1], seeds=2).values == (0.5,)  # no outcome at all for seed 1
    geo = geomean_speedup(outcomes)
    assert (geo.value, geo.correct, geo.total) == (2.0, 1, 2)
