"""Runs and experiments exported from one installation and imported into another (demo data from a GPU host):
`export_trajectory` writes what `import_trajectory` reads, `export_experiment` / `import_experiment` carry a
whole experiment with the same analyses."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from apps.catalog.models import Task
from apps.catalog.services import tasks_sync
from apps.experiments.models import Experiment, ExperimentRun
from apps.experiments.reports import experiment_report, report_json
from apps.runs.models import Run, RunStatus
from apps.runs.services import RunConfig, run_create
from apps.runs.trajectory_export import trajectory_export
from apps.runs.trajectory_import import trajectory_import
from worker.agents.trajectory import load

pytestmark = pytest.mark.django_db
DEMO = sorted((Path(settings.BASE_DIR) / "demo" / "trajectories").glob("*_trajectory.json"))


@pytest.fixture
def library(db):
    tasks_sync(settings.TASKS_DIR)


def _stored(run: Run) -> dict:
    """Everything a run page shows of a run, without ids and timestamps."""
    turns = []
    for t in run.turns.order_by("round_index", "debug_index"):
        assembly = getattr(t, "assembly", None)  # RelatedObjectDoesNotExist is an AttributeError
        turns.append({
            "key": (t.round_index, t.debug_index), "kind": t.kind,
            "parent": (t.parent.round_index, t.parent.debug_index) if t.parent else None,
            **{f: getattr(t, f) for f in ("scheme", "code", "compile_command", "compile_log", "ptxas", "results",
                                          "verdict", "reason", "score", "valid", "llm_seconds", "compile_seconds",
                                          "eval_seconds", "profile_seconds")},
            "assembly": (assembly.ptx, assembly.sass, assembly.note) if assembly else None,
            "profiles": list(t.profiles.order_by("size_index", "kernel").values(
                "size_index", "size", "kernel", "bottleneck", "filtered_metrics", "full_metrics", "tool_version",
                "gpu_name")),
            "calls": list(t.agent_calls.order_by("created_at", "id").values(
                "role", "model", "messages", "response", "tokens_in", "tokens_out", "cost_usd", "latency_s",
                "error")),
        })
    return {
        "run": {f: getattr(run, f) for f in ("status", "model", "rounds", "debug_rounds", "profile_mode",
                                             "temperature", "seed", "best_score", "tokens_in", "tokens_out",
                                             "cost_usd", "wall_time_s", "gpu_time_s", "gpu_name", "error")},
        "best": (run.best_turn.round_index, run.best_turn.debug_index) if run.best_turn else None,
        "turns": turns,
        "events": list(run.events.order_by("seq").values_list("seq", "type", "payload")),
    }


def test_an_exported_run_imports_as_the_same_run(library, admin_user):
    original = trajectory_import(load(DEMO[0]), owner=admin_user)
    document = trajectory_export(original)
    assert load_roundtrip(document) == document  # plain JSON
    copy = trajectory_import(document, owner=admin_user)
    assert copy.pk != original.pk and _stored(copy) == _stored(original)
    again = trajectory_export(copy)
    assert {k: v for k, v in again.items() if k != "origin"} == {k: v for k, v in document.items() if k != "origin"}


def load_roundtrip(document: dict) -> dict:
    return json.loads(json.dumps(document))


def test_export_trajectory_writes_files_import_trajectory_reads(library, admin_user, tmp_path):
    run = trajectory_import(load(DEMO[1]), owner=admin_user)
    out = StringIO()
    call_command("export_trajectory", str(run.pk), "--out", str(tmp_path), stdout=out)
    [path] = tmp_path.glob("*.json")
    assert path.name == f"{run.task.operator}_{run.task.precision}_run{run.pk}.json" and str(path) in out.getvalue()
    call_command("import_trajectory", str(path), stdout=StringIO())
    copy = Run.objects.exclude(pk=run.pk).get()
    assert _stored(copy) == _stored(run)


def test_a_run_that_has_not_finished_is_not_exported(library, admin_user, tmp_path):
    task = Task.objects.get(suite="mskernelbench", operator="softmax", precision="fp32")
    run = run_create(owner=admin_user, task=task, config=RunConfig(model="scripted"), dispatch=False)
    with pytest.raises(CommandError, match="still queued"):
        call_command("export_trajectory", str(run.pk), "--out", str(tmp_path), stdout=StringIO())
    with pytest.raises(CommandError, match="no run 999"):
        call_command("export_trajectory", "999", "--out", str(tmp_path), stdout=StringIO())


@pytest.fixture
def experiment(library, admin_user):
    """The demo runs as an experiment, plus a trial whose run was deleted (a failure in every analysis)."""
    experiment = Experiment.objects.create(name="demo R2 D1", owner=admin_user, model="scripted", rounds=2,
                                           debug_rounds=1, selection="3 hand-picked tasks", is_public=True)
    for path in DEMO:
        run = trajectory_import(load(path), owner=admin_user, public=True)
        ExperimentRun.objects.create(experiment=experiment, task=run.task, run=run)
    missing = Task.objects.get(suite="mskernelbench", operator="vector_add", precision="bf16")
    ExperimentRun.objects.create(experiment=experiment, task=missing, run=None)
    return experiment


def _analyses(experiment: Experiment) -> dict:
    report = experiment_report(experiment, "all")
    tables = report_json(report.tables(), report.charts())["tables"]
    for row in tables["outcomes"]["rows"]:
        row.pop("run_id", None)
    return tables


def test_an_exported_experiment_imports_with_the_same_members_and_analyses(experiment, admin_user, tmp_path):
    out = StringIO()
    call_command("export_experiment", str(experiment.pk), "--out", str(tmp_path), stdout=out)
    manifest = json.loads((tmp_path / "experiment.json").read_text())
    assert [m["trajectory"] is None for m in manifest["members"]].count(True) == 1
    assert len(list(tmp_path.glob("*_attempt0.json"))) == len(DEMO)
    call_command("import_experiment", str(tmp_path), stdout=out)
    copy = Experiment.objects.exclude(pk=experiment.pk).get()
    assert (copy.name, copy.rounds, copy.debug_rounds, copy.is_public, copy.owner) == (
        "demo R2 D1", 2, 1, True, admin_user)
    assert copy.members.count() == len(DEMO) + 1 and copy.members.filter(run=None).count() == 1
    assert Run.objects.count() == 2 * len(DEMO)
    assert _analyses(copy) == _analyses(experiment)
    assert _analyses(copy)["success_curve"]["rows"][0]["successes"] == len(DEMO)


def test_importing_an_experiment_twice_needs_force_and_a_refused_import_stores_nothing(experiment, tmp_path):
    call_command("export_experiment", str(experiment.pk), "--out", str(tmp_path), stdout=StringIO())
    call_command("import_experiment", str(tmp_path), stdout=StringIO())
    with pytest.raises(CommandError, match="already run"):
        call_command("import_experiment", str(tmp_path), stdout=StringIO())
    assert Experiment.objects.count() == 2 and Run.objects.count() == 2 * len(DEMO)
    call_command("import_experiment", str(tmp_path), "--force", stdout=StringIO())
    assert Experiment.objects.count() == 3 and Run.objects.count() == 3 * len(DEMO)


def test_an_experiment_with_a_run_still_going_is_not_exported(experiment, admin_user, tmp_path):
    run = run_create(owner=admin_user, task=Task.objects.get(suite="mskernelbench", operator="RELU", precision="fp32"),
                     config=RunConfig(model="scripted"), dispatch=False)
    ExperimentRun.objects.create(experiment=experiment, task=run.task, run=run)
    assert run.status == RunStatus.QUEUED
    with pytest.raises(CommandError, match="have not finished"):
        call_command("export_experiment", str(experiment.pk), "--out", str(tmp_path), stdout=StringIO())


def test_a_folder_that_is_not_an_experiment_is_refused(library, admin_user, tmp_path):
    (tmp_path / "experiment.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(CommandError, match="not a KernelWeb experiment"):
        call_command("import_experiment", str(tmp_path), stdout=StringIO())
