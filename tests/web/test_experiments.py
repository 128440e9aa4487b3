"""Experiments in the database: launch (one run per task × seed, all or none, dispatched after commit),
cancel, re-run of the failed ones, ownership and visibility, progress, and the outcomes the analyses read."""

import json
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied

from apps.catalog.models import Task
from apps.experiments import selectors, services
from apps.experiments.analysis import fast_p, success_curve
from apps.experiments.models import Experiment, ExperimentRun
from apps.experiments.selectors import (
    LibraryReference,
    TaskSelection,
    experiment_for_user,
    experiment_progress,
    experiments_visible_to,
    load_library_references,
    outcomes_for,
)
from apps.experiments.services import ExperimentError, experiment_cancel, experiment_launch, experiment_rerun_failed
from apps.llm.models import LLMEndpoint
from apps.runs.models import AgentCall, Profile, Run, RunStatus, Turn
from apps.runs.services import RunConfig, run_claim, run_fail, run_succeed

pytestmark = pytest.mark.django_db

CB, ML, MB = "compute_bound", "memory_latency_bound", "memory_bandwidth_bound"


@pytest.fixture
def sent(monkeypatch):
    dispatched = []
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: dispatched.append(run_id))
    return dispatched


def clone(task, **changes):
    copy = Task.objects.get(pk=task.pk)
    copy.pk = None
    for name, value in changes.items():
        setattr(copy, name, value)
    copy.save()
    return copy


@pytest.fixture
def tasks(task):
    """vadd fp32 and bf16, and relu fp32 in another category."""
    return [task, clone(task, precision="bf16"), clone(task, operator="relu", category="activation")]


def launch(owner, tasks, **kw):
    kw.setdefault("config", RunConfig(model="scripted"))
    return experiment_launch(owner=owner, name=kw.pop("name", "full R3 D3"), tasks=tasks, **kw)


# ------------------------------------------------------------------------------------------------ launch


def test_launch_creates_one_run_per_task_and_seed_and_dispatches_them_after_commit(
        user, tasks, sent, django_capture_on_commit_callbacks):
    config = RunConfig(model="m", rounds=2, debug_rounds=1, profile_mode="none", temperature=0.5, seed=100,
                       agent_models={"coder": "big"}, token_budget=9000, cost_budget_usd=1.5)
    with django_capture_on_commit_callbacks(execute=True):
        experiment = launch(user, tasks[:2], config=config, seeds=3, selection="suite testsuite",
                            is_public=True)
        assert sent == []  # nothing reaches a worker before the commit
    members = list(experiment.members.select_related("run").order_by("task_id", "seed_index"))
    assert [(m.task_id, m.seed_index, m.attempt) for m in members] == [
        (t.pk, k, 0) for t in tasks[:2] for k in range(3)]
    assert [m.run.seed for m in members] == [100, 101, 102, 100, 101, 102]
    assert sorted(sent) == sorted(m.run_id for m in members) and len(sent) == 6
    run = members[0].run
    assert (run.owner, run.is_public, run.model, run.rounds, run.debug_rounds, run.profile_mode, run.temperature,
            run.agent_models, run.token_budget, run.cost_budget_usd, run.status) == (
        user, True, "m", 2, 1, "none", 0.5, {"coder": "big"}, 9000, Decimal("1.5"), RunStatus.QUEUED)
    experiment.refresh_from_db()
    assert (experiment.seeds, experiment.seed, experiment.selection, experiment.cost_budget_usd) == (
        3, 100, "suite testsuite", Decimal("1.5000"))
    assert services.config_of(experiment) == config


def test_a_single_seed_keeps_the_configured_seed_even_when_none(user, task, sent):
    experiment = launch(user, [task])
    assert experiment.members.get().run.seed is None
    assert [services.seed_for(None, k, 2) for k in range(2)] == [0, 1]


def test_each_task_is_launched_once_however_often_it_is_listed(user, task, sent):
    experiment = launch(user, [task, task, task])
    assert experiment.members.count() == 1 and Run.objects.count() == 1


def test_launch_is_all_or_nothing(user, tasks, sent, monkeypatch, django_capture_on_commit_callbacks):
    real = services.run_create
    calls = []

    def third_fails(**kw):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("database went away")
        return real(**kw)

    monkeypatch.setattr(services, "run_create", third_fails)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError):
        launch(user, tasks)
    assert (Experiment.objects.count(), ExperimentRun.objects.count(), Run.objects.count()) == (0, 0, 0)
    assert sent == []


@pytest.mark.parametrize(("change", "message"), [
    ({"name": "  "}, "give the experiment a name"),
    ({"name": "x" * 201}, "longer than 200 characters"),
    ({"tasks": []}, "select at least one task"),
    ({"seeds": 0}, "seeds must be between 1 and 10"),
    ({"seeds": 11}, "seeds must be between 1 and 10"),
])
def test_launch_refuses_bad_input_and_creates_nothing(user, task, sent, change, message):
    kw = {"tasks": [task], **change}
    with pytest.raises(ExperimentError, match=message):
        launch(user, **kw)
    assert Experiment.objects.count() == 0 and Run.objects.count() == 0 and sent == []


def test_launch_refuses_disabled_tasks_and_someone_elses_endpoint(user, other_user, task, sent):
    off = clone(task, precision="bf16", enabled=False)
    with pytest.raises(ExperimentError, match="disabled tasks cannot run: testsuite/vadd .bf16."):
        launch(user, [task, off])
    bobs = LLMEndpoint.objects.create(name="bobs", base_url="http://127.0.0.1:9/v1", owner=other_user)
    with pytest.raises(ExperimentError, match="not one of yours"):
        launch(user, [task], config=RunConfig(model="m", endpoint_id=bobs.pk))
    shared = LLMEndpoint.objects.create(name="lab", base_url="http://127.0.0.1:9/v1")
    assert launch(user, [task], config=RunConfig(model="m", endpoint_id=shared.pk)).endpoint == shared
    assert Run.objects.count() == 1


def test_too_many_runs_are_refused(user, tasks, sent, monkeypatch):
    monkeypatch.setattr(services, "MAX_RUNS", 5)
    with pytest.raises(ExperimentError, match="3 tasks × 2 seeds is more than 5 runs"):
        launch(user, tasks, seeds=2)


def test_a_task_selection_combines_suite_category_precision_and_picked_tasks(tasks):
    vadd32, vadd16, relu = tasks
    clone(vadd32, operator="off", enabled=False)
    assert list(TaskSelection().tasks()) == [relu, vadd16, vadd32]  # enabled only, category then operator
    assert list(TaskSelection(precision="fp32").tasks()) == [relu, vadd32]
    assert list(TaskSelection(category="activation").tasks()) == [relu]
    assert list(TaskSelection(suite="testsuite", task_ids=(vadd16.pk, relu.pk)).tasks()) == [relu, vadd16]
    assert TaskSelection(suite="mskernelbench", precision="bf16").describe() == "suite mskernelbench, precision bf16"
    assert TaskSelection(task_ids=(1, 2)).describe() == "2 hand-picked tasks"
    assert TaskSelection().describe() == "all enabled tasks"


# ---------------------------------------------------------------------------------- cancel and re-run


def _finish(run, status, error=""):
    run_claim(run.pk, worker_host="h")
    if status == RunStatus.SUCCEEDED:
        run_succeed(run.pk)
    elif status == RunStatus.FAILED:
        run_fail(run.pk, error or "No NVIDIA GPU on worker host h")
    elif status == RunStatus.CANCELLED:
        services.run_cancel(run)


def test_cancel_stops_queued_and_running_runs_and_leaves_finished_ones(user, tasks, sent):
    experiment = launch(user, tasks, seeds=2)
    runs = [m.run for m in experiment.members.select_related("run").order_by("pk")]
    _finish(runs[0], RunStatus.SUCCEEDED)
    _finish(runs[1], RunStatus.FAILED)
    run_claim(runs[2].pk, worker_host="h")  # running
    assert experiment_cancel(experiment, by=user) == 4  # one running, three queued
    statuses = list(Run.objects.filter(pk__in=[r.pk for r in runs]).order_by("pk").values_list("status", flat=True))
    assert statuses == ["succeeded", "failed"] + ["cancelled"] * 4
    assert experiment_cancel(experiment, by=user) == 0


def test_only_the_owner_or_staff_may_cancel_or_rerun(user, other_user, task, sent, django_user_model):
    experiment = launch(user, [task], is_public=True)
    with pytest.raises(PermissionDenied):
        experiment_cancel(experiment, by=other_user)
    with pytest.raises(PermissionDenied):
        experiment_rerun_failed(experiment, by=other_user)
    assert Run.objects.get().status == RunStatus.QUEUED
    staff = django_user_model.objects.create_user(username="root", password="pw-root-123", is_staff=True)
    assert experiment_cancel(experiment, by=staff) == 1


def test_rerun_failed_launches_the_failed_cancelled_and_deleted_again_with_the_same_seed(
        user, tasks, sent, django_capture_on_commit_callbacks):
    experiment = launch(user, tasks, seeds=2, config=RunConfig(model="m", seed=7))
    members = list(experiment.members.select_related("run").order_by("task_id", "seed_index"))
    _finish(members[0].run, RunStatus.SUCCEEDED)
    _finish(members[1].run, RunStatus.FAILED)
    _finish(members[2].run, RunStatus.CANCELLED)
    members[3].run.delete()  # the member stays, without its run
    _finish(members[4].run, RunStatus.FAILED)
    # members[5] is still queued: not re-run
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = experiment_rerun_failed(experiment, by=user)
        assert sent == []
    assert len(again) == 4 and sorted(sent) == sorted(r.pk for r in again)
    redone = {(m.task_id, m.seed_index): m for m in experiment.members.filter(attempt=1).select_related("run")}
    assert set(redone) == {(members[i].task_id, members[i].seed_index) for i in (1, 2, 3, 4)}
    assert all(m.run.seed == 7 + m.seed_index and m.run.status == RunStatus.QUEUED for m in redone.values())
    progress = experiment_progress(experiment)
    assert progress.total == 6 and progress.counts[RunStatus.QUEUED] == 5 and progress.counts["succeeded"] == 1
    assert experiment_rerun_failed(experiment, by=user) == []  # nothing failed any more


def test_rerun_skips_tasks_disabled_since_the_launch(user, task, sent):
    experiment = launch(user, [task])
    _finish(experiment.members.get().run, RunStatus.FAILED)
    Task.objects.filter(pk=task.pk).update(enabled=False)
    assert experiment_rerun_failed(experiment, by=user) == []


# ------------------------------------------------------------------------------------------- visibility


def test_experiments_are_visible_to_their_owner_to_staff_and_when_public_to_everyone(
        user, other_user, task, sent, django_user_model):
    from django.contrib.auth.models import AnonymousUser

    mine = launch(user, [task], name="mine")
    shared = launch(user, [task], name="shared", is_public=True)
    assert set(experiments_visible_to(user)) == {mine, shared}
    assert set(experiments_visible_to(other_user)) == {shared}
    assert experiment_for_user(other_user, mine.pk) is None and experiment_for_user(other_user, shared.pk) == shared
    assert set(experiments_visible_to(AnonymousUser())) == {shared}  # anonymous visitors: public ones only
    staff = django_user_model.objects.create_user(username="root", password="pw-root-123", is_staff=True)
    assert set(experiments_visible_to(staff)) == {mine, shared}


# --------------------------------------------------------------------------------------------- progress


def test_progress_counts_queued_running_and_done_per_task_and_seed(user, tasks, sent):
    experiment = launch(user, tasks)
    members = list(experiment.members.select_related("run").order_by("task_id"))
    run_claim(members[0].run.pk, worker_host="h")
    _finish(members[1].run, RunStatus.FAILED, "No NVIDIA GPU on worker host h (nvidia-smi not found)")
    progress = experiment_progress(experiment)
    assert (progress.counts["queued"], progress.counts["running"], progress.counts["failed"]) == (1, 1, 1)
    assert (progress.total, progress.done, progress.is_active, progress.rerunnable) == (3, 1, True, 1)
    failed = next(r for r in progress.rows if r.status == "failed")
    assert failed.error.startswith("No NVIDIA GPU") and failed.task == tasks[1].slug


# --------------------------------------------------------------------------------------------- outcomes


def _turn(run, round_index, debug_index=0, *, kind="optimize", valid=True, score=None, speedups=(), classes=()):
    turn = Turn.objects.create(run=run, round_index=round_index, debug_index=debug_index, kind=kind, valid=valid,
                               score=score, verdict="ok" if valid else "incorrect",
                               results=[{"index": n, "speedup": s} for n, s in enumerate(speedups)])
    Profile.objects.bulk_create(Profile(turn=turn, size_index=n, kernel="k", bottleneck=c)
                                for n, c in enumerate(classes))
    return turn


def _call(turn, role, tokens_in, tokens_out, cost):
    AgentCall.objects.create(turn=turn, role=role, model="m", tokens_in=tokens_in, tokens_out=tokens_out,
                             cost_usd=Decimal(cost))


def test_outcomes_are_built_from_runs_turns_profiles_and_calls_in_a_fixed_number_of_queries(
        user, tasks, sent, django_assert_max_num_queries):
    experiment = launch(user, tasks, seeds=2)
    m = {(x.task_id, x.seed_index): x for x in experiment.members.select_related("run")}
    vadd32, vadd16, relu = tasks

    # vadd fp32 seed 0: round 1 valid (P 1.5), round 2 best (P 2.5); ML baseline → CB
    run = m[(vadd32.pk, 0)].run
    base = _turn(run, 0, kind="baseline", score=1.0, classes=(ML, ML, CB))
    _turn(run, 1, score=1.5, speedups=(1.5, 1.5), classes=(MB, MB))
    best = _turn(run, 2, score=2.5, speedups=(2.0, 8.0), classes=(CB, CB, MB))
    _call(base, "planner", 100, 50, "0.010000")
    _call(best, "coder", 300, 200, "0.040000")
    _call(best, "planner", 10, 40, "0.005000")
    _finish(run, RunStatus.SUCCEEDED)
    Run.objects.filter(pk=run.pk).update(best_turn=best, best_score=2.5, tokens_in=410, tokens_out=290,
                                         cost_usd=Decimal("0.055"))

    # vadd fp32 seed 1: every candidate slower, so the run's best is still the baseline; P of the best candidate
    run = m[(vadd32.pk, 1)].run
    base = _turn(run, 0, kind="baseline", score=1.0)
    _turn(run, 1, score=0.7, speedups=(0.7,))
    _turn(run, 1, 1, kind="debug", score=0.9, speedups=(0.9,))
    _turn(run, 2, kind="manual", score=5.0, speedups=(5.0,))  # a hand-written turn is not the agent's
    _call(base, "debug", 1, 1, "0.001000")  # the run never recorded totals: the calls are summed
    _finish(run, RunStatus.SUCCEEDED)
    Run.objects.filter(pk=run.pk).update(best_turn=base, best_score=1.0)

    # vadd bf16 seed 0: succeeded, but no valid candidate at all
    run = m[(vadd16.pk, 0)].run
    base = _turn(run, 0, kind="baseline", score=1.0)
    _turn(run, 1, valid=False)
    _finish(run, RunStatus.SUCCEEDED)
    Run.objects.filter(pk=run.pk).update(best_turn=base, best_score=1.0)

    # vadd bf16 seed 1: a valid candidate, but the run failed afterwards
    run = m[(vadd16.pk, 1)].run
    _turn(run, 1, score=3.0, speedups=(3.0,))
    _finish(run, RunStatus.FAILED, "internal error in the pipeline")

    # relu seed 0: no GPU; relu seed 1: its run was deleted
    _finish(m[(relu.pk, 0)].run, RunStatus.FAILED)
    m[(relu.pk, 1)].run.delete()

    refs = {("vadd", "fp32"): LibraryReference(5.0, (3.0, 6.0))}
    with django_assert_max_num_queries(5):
        outcomes = outcomes_for(experiment, references=refs)
    got = {o.key: o for o in outcomes}
    assert len(outcomes) == 6

    o = got[(vadd32.pk, 0)]
    assert (o.correct, o.score, o.speedups, o.speedup) == (True, 2.5, (2.0, 8.0), pytest.approx(4.0))
    assert (o.baseline_class, o.best_class) == (ML, CB)
    assert (o.tokens, o.cost_usd) == (700, pytest.approx(0.055))
    assert o.tokens_by_role == {"planner": 200, "coder": 500}
    assert o.cost_by_role == {"planner": pytest.approx(0.015), "coder": pytest.approx(0.04)}
    assert (o.reference_score, o.reference_speedups, o.operator, o.precision) == (5.0, (3.0, 6.0), "vadd", "fp32")

    o = got[(vadd32.pk, 1)]
    assert (o.correct, o.score, o.speedups) == (True, 0.9, (0.9,))
    assert (o.tokens, o.cost_usd) == (2, pytest.approx(0.001))

    o = got[(vadd16.pk, 0)]
    assert (o.status, o.correct, o.score, o.best_class) == ("succeeded", False, None, "")
    o = got[(vadd16.pk, 1)]
    assert (o.status, o.correct, o.score) == ("failed", False, None)
    o = got[(relu.pk, 0)]
    assert (o.status, o.correct) == ("failed", False) and o.error.startswith("No NVIDIA GPU")
    o = got[(relu.pk, 1)]
    assert (o.status, o.correct, o.run_id) == ("missing", False, None)

    # P > 0: 2 of 6; P > 1: 1 of 6 (the slower candidate's 0.9 does not beat the baseline)
    assert success_curve(outcomes, (0, 1)).get("all").counts == (2, 1)
    assert fast_p(outcomes, (0, 1)).counts == (2, 1) and fast_p(outcomes, (0,)).total == 6


def test_the_latest_attempt_of_a_rerun_is_the_one_analysed(user, task, sent):
    experiment = launch(user, [task])
    _finish(experiment.members.get().run, RunStatus.FAILED)
    (again,) = experiment_rerun_failed(experiment, by=user)
    _turn(again, 1, score=2.0, speedups=(2.0,))
    _finish(again, RunStatus.SUCCEEDED)
    (outcome,) = outcomes_for(experiment, references={})
    assert (outcome.run_id, outcome.correct, outcome.score) == (again.pk, True, 2.0)


def test_library_references_are_read_from_the_library_bench_json(tmp_path, settings):
    bench = {"rows": [], "reference": [
        {"task": "vadd", "precision": "fp32", "verdict": "ok", "score": 1.8,
         "sizes": [{"index": 0, "speedup": 1.5}, {"index": 1, "speedup": 2.0}]},
        {"task": "vadd", "precision": "bf16", "verdict": "incorrect", "score": None, "sizes": []},
    ]}
    path = tmp_path / "library.json"
    path.write_text(json.dumps(bench))
    assert load_library_references(path) == {("vadd", "fp32"): LibraryReference(1.8, (1.5, 2.0))}
    assert load_library_references(tmp_path / "absent.json") == {} and load_library_references("") == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert load_library_references(tmp_path / "bad.json") == {}
    settings.LIBRARY_REFERENCES_FILE = str(path)
    assert selectors.library_references()[("vadd", "fp32")].score == 1.8


def test_runs_that_end_without_a_gpu_count_as_failures(user, tasks, monkeypatch, django_capture_on_commit_callbacks):
    """What a CI worker does with an experiment: every run fails with the no-GPU reason, every analysis
    counts it (the Celery task body runs here in place of a worker)."""
    from apps.runs.execution import run_execute
    from worker.engine import toolchain
    if toolchain.detect().gpu is not None:
        pytest.skip("asserts the no-GPU ending; on a GPU host the runs go on to the pipeline")
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", run_execute)
    with django_capture_on_commit_callbacks(execute=True):
        experiment = launch(user, tasks, seeds=2)
    progress = experiment_progress(experiment)
    assert progress.counts["failed"] == 6 and not progress.is_active
    assert all("No NVIDIA GPU" in r.error for r in progress.rows)
    outcomes = outcomes_for(experiment, references={})
    assert success_curve(outcomes).get("all").total == 6 and success_curve(outcomes).get("all").counts[0] == 0
    assert fast_p(outcomes).values[0] == 0.0 and fast_p(outcomes).total == 6
