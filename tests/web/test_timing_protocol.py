"""A run (and an experiment) chooses the evaluator's timing protocol, synchronized or queued (docs/evaluation.md,
"Timing protocol"): the launch form and the API take it, the pipeline, manual turns and verifications evaluate
with it, exports and imports keep it, and the pages say which it was."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.catalog.models import Task
from apps.catalog.services import tasks_sync
from apps.experiments.bundle import ExperimentBundleError, experiment_export, experiment_import
from apps.experiments.models import Experiment
from apps.experiments.services import experiment_rerun_failed
from apps.runs.execution import pipeline_config, turn_options, verification_options
from apps.runs.models import Run, RunStatus, TimingProtocol, Turn, TurnKind
from apps.runs.services import RunConfig, run_create
from apps.runs.trajectory_export import trajectory_export
from apps.runs.trajectory_import import TrajectoryImportError, trajectory_import
from tests.web.test_experiments import _finish, clone
from worker.agents.trajectory import load
from worker.engine.context import TIMING_PROTOCOLS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_worker")]
DEMO = Path(settings.BASE_DIR) / "demo" / "trajectories" / "softmax_fp32_trajectory.json"
LAUNCH = {"model": "m", "rounds": 1, "debug_rounds": 0, "profile_mode": "none", "temperature": 0.2}


@pytest.fixture
def library(db):
    tasks_sync(settings.TASKS_DIR)


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def page_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def queued_run(owner, task, **fields) -> Run:
    return run_create(owner=owner, task=task, config=RunConfig(model="scripted", timing_protocol="queued", **fields),
                      dispatch=False)


def test_the_web_offers_exactly_the_protocols_the_engine_knows():
    assert tuple(TimingProtocol.values) == TIMING_PROTOCOLS
    assert TimingProtocol.SYNCHRONIZED.label.startswith("Synchronized") and TimingProtocol.QUEUED.label.startswith(
        "Queued")


# ---- launching ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["synchronized", "queued"])
def test_the_launch_form_stores_the_chosen_protocol(user, task, protocol):
    response = page_for(user).post(reverse("runs:launch"), {"tasks": [task.pk], **LAUNCH, "timing_protocol": protocol})
    assert response.status_code == 302
    assert Run.objects.get().timing_protocol == protocol


def test_the_launch_form_offers_the_protocols_with_synchronized_chosen(user, task):
    html = page_for(user).get(reverse("runs:launch")).content.decode()
    assert '<option value="synchronized" selected>Synchronized — comparable' in html
    assert '<option value="queued">Queued — the kernel&#x27;s own time, repeatable</option>' in html


def test_a_launch_form_without_the_protocol_is_timed_synchronized(user, task):
    assert page_for(user).post(reverse("runs:launch"), {"tasks": [task.pk], **LAUNCH}).status_code == 302
    assert Run.objects.get().timing_protocol == "synchronized"


def test_the_launch_form_refuses_an_unknown_protocol_on_that_field(user, task):
    response = page_for(user).post(reverse("runs:launch"), {"tasks": [task.pk], **LAUNCH, "timing_protocol": "fast"})
    assert response.status_code == 200 and not Run.objects.exists()
    assert list(response.context["form"].errors) == ["timing_protocol"]
    assert "Select a valid choice. fast is not one of the available choices." in response.content.decode()


@pytest.mark.parametrize("protocol", ["synchronized", "queued"])
def test_the_api_stores_the_chosen_protocol_and_shows_it_in_the_config(user, task, protocol):
    response = api_for(user).post("/api/runs/", {"tasks": [task.pk], "model": "m", "timing_protocol": protocol},
                                  format="json")
    assert response.status_code == 201, response.content
    assert response.json()["runs"][0]["config"]["timing_protocol"] == protocol
    assert Run.objects.get().timing_protocol == protocol


def test_the_api_refuses_an_unknown_protocol_naming_the_field(user, task):
    response = api_for(user).post("/api/runs/", {"tasks": [task.pk], "model": "m", "timing_protocol": "fast"},
                                  format="json")
    assert response.status_code == 400 and not Run.objects.exists()
    assert response.json() == {"timing_protocol": ["Select a valid choice. fast is not one of the available choices."]}


def test_an_experiment_launched_queued_through_the_api_times_every_run_queued(user, task):
    tasks = [task, clone(task, precision="bf16")]
    response = api_for(user).post("/api/experiments/", {
        "name": "queued", "tasks": [t.pk for t in tasks], "model": "m", "timing_protocol": "queued", "seeds": 2},
        format="json")
    assert response.status_code == 201, response.content
    experiment = Experiment.objects.get()
    assert experiment.timing_protocol == "queued" and response.json()["config"]["timing_protocol"] == "queued"
    assert list(Run.objects.values_list("timing_protocol", flat=True)) == ["queued"] * 4


def test_the_experiment_api_refuses_an_unknown_protocol_naming_the_field(user, task):
    response = api_for(user).post("/api/experiments/", {"name": "x", "tasks": [task.pk], "model": "m",
                                                        "timing_protocol": "fast"}, format="json")
    assert response.status_code == 400 and "timing_protocol" in response.json()
    assert not Experiment.objects.exists()


def test_the_experiment_form_launches_queued_and_a_variant_and_a_rerun_keep_it(user, task):
    client = page_for(user)
    response = client.post(reverse("experiments:launch"), {"name": "q", "tasks": [task.pk], "seeds": 1, **LAUNCH,
                                                           "timing_protocol": "queued"})
    assert response.status_code == 302
    experiment = Experiment.objects.get()
    assert experiment.timing_protocol == "queued" and experiment.members.get().run.timing_protocol == "queued"
    variant = client.get(f"{reverse('experiments:launch')}?from={experiment.pk}").content.decode()
    assert '<option value="queued" selected>' in variant
    _finish(experiment.members.get().run, RunStatus.FAILED, "lost")
    [again] = experiment_rerun_failed(experiment, by=user, dispatch=False)
    assert again.timing_protocol == "queued"


# ---- evaluating ---------------------------------------------------------------------------------------------


def test_a_queued_run_gives_the_pipeline_queued_timing(user, task):
    config = pipeline_config(queued_run(user, task, profile_mode="full"))
    assert config.timing_protocol == "queued"
    options = config.evaluation_options()
    assert options.queued_timing is True and options.profile == "full"
    synchronized = pipeline_config(run_create(owner=user, task=task, config=RunConfig(model="scripted"),
                                              dispatch=False))
    assert synchronized.evaluation_options().queued_timing is False


def test_a_manual_turn_on_a_queued_run_is_timed_queued(user, task):
    run = queued_run(user, task, profile_mode="none")
    assert (turn_options(run).queued_timing, turn_options(run).profile) == (True, "none")
    run.timing_protocol = TimingProtocol.SYNCHRONIZED
    assert turn_options(run).queued_timing is False


@pytest.mark.parametrize(("protocol", "queued"), [("queued", True), ("synchronized", False)])
def test_a_turn_is_verified_with_the_protocol_of_the_run_that_recorded_it(user, task, protocol, queued):
    run = run_create(owner=user, task=task, config=RunConfig(model="scripted", timing_protocol=protocol),
                     dispatch=False)
    options = verification_options(run, 424_242)
    assert options.queued_timing is queued
    # still a verification: unseen seeds, both sides timed now, profiled for the cross-check
    assert (options.seed_base, options.use_baseline_cache, options.profile) == (424_242, False, "filtered")


# ---- exports and imports ------------------------------------------------------------------------------------


def test_a_queued_run_keeps_its_protocol_through_a_trajectory_export_and_import(library, admin_user):
    original = trajectory_import(load(DEMO), owner=admin_user)
    Run.objects.filter(pk=original.pk).update(timing_protocol="queued")
    original.refresh_from_db()
    document = json.loads(json.dumps(trajectory_export(original)))
    assert document["config"]["timing_protocol"] == "queued"
    assert trajectory_import(document, owner=admin_user).timing_protocol == "queued"


def test_a_trajectory_recorded_before_the_choice_imports_as_synchronized(library, admin_user):
    data = load(DEMO)
    assert "timing_protocol" not in data["config"]  # the committed H200 demo data predates the choice
    assert trajectory_import(data, owner=admin_user).timing_protocol == "synchronized"


def test_a_trajectory_with_an_unknown_protocol_is_refused_and_nothing_is_stored(library, admin_user):
    data = load(DEMO)
    data["config"]["timing_protocol"] = "fast"
    with pytest.raises(TrajectoryImportError, match="config.timing_protocol must be one of synchronized, queued"):
        trajectory_import(data, owner=admin_user)
    assert not Run.objects.exists()


def finished_queued_experiment(owner) -> Experiment:
    task = Task.objects.get(suite="mskernelbench", operator="softmax", precision="fp32")
    experiment = Experiment.objects.create(name="queued", owner=owner, model="scripted", timing_protocol="queued")
    run = trajectory_import(load(DEMO), owner=owner)
    Run.objects.filter(pk=run.pk).update(timing_protocol="queued")
    experiment.members.create(task=task, run=run)
    return experiment


def test_an_experiment_bundle_keeps_the_protocol_of_the_experiment_and_its_runs(library, admin_user, tmp_path):
    manifest = experiment_export(finished_queued_experiment(admin_user), tmp_path)
    assert json.loads(manifest.read_text())["config"]["timing_protocol"] == "queued"
    copy = experiment_import(tmp_path, owner=admin_user, force=True)
    assert copy.timing_protocol == "queued" and copy.members.get().run.timing_protocol == "queued"


def test_an_experiment_bundle_without_the_protocol_imports_as_synchronized(library, admin_user, tmp_path):
    manifest = experiment_export(finished_queued_experiment(admin_user), tmp_path)
    data = json.loads(manifest.read_text())
    del data["config"]["timing_protocol"]
    manifest.write_text(json.dumps(data))
    assert experiment_import(tmp_path, owner=admin_user, force=True).timing_protocol == "synchronized"
    data["config"]["timing_protocol"] = "fast"
    manifest.write_text(json.dumps(data))
    with pytest.raises(ExperimentBundleError, match="experiment.json: config.timing_protocol must be one of"):
        experiment_import(tmp_path, owner=admin_user, force=True)


# ---- pages --------------------------------------------------------------------------------------------------


def test_the_run_page_says_how_the_run_was_timed(user, task):
    run = queued_run(user, task)
    html = page_for(user).get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'timing <span title="Queued — the kernel&#x27;s own time, repeatable">queued</span>' in html


def test_the_experiment_pages_say_how_its_runs_were_timed(user, task):
    page_for(user).post(reverse("experiments:launch"), {"name": "q", "tasks": [task.pk], "seeds": 1, **LAUNCH,
                                                        "timing_protocol": "queued"})
    experiment = Experiment.objects.get()
    client = page_for(user)
    detail = client.get(reverse("experiments:detail", args=[experiment.pk])).content.decode()
    assert ">queued</span>" in detail and "timing <span" in detail
    assert "· timing queued" in client.get(reverse("experiments:list")).content.decode()


def test_the_showcase_says_how_the_published_result_was_timed(library, admin_user):
    call_command("import_trajectory", str(DEMO), "--public", stdout=StringIO())
    Run.objects.update(timing_protocol="queued")
    html = Client().get("/showcase/mskernelbench/softmax/fp32/").content.decode()
    assert "<dt>timing</dt><dd>Queued — the kernel&#x27;s own time, repeatable</dd>" in html


def test_a_synchronized_run_shows_synchronized(user, task):
    run = Run.objects.create(task=task, owner=user, model="m", status=RunStatus.SUCCEEDED)
    Turn.objects.create(run=run, round_index=0, kind=TurnKind.BASELINE, code="//", verdict="ok")
    html = page_for(user).get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert ">synchronized</span>" in html


def test_how_a_turn_was_timed_is_kept_with_it_and_shown_on_its_panel_in_the_api_and_in_an_export(library, admin_user):
    note = "timed beside its baseline, taking turns on one CPU: its call waits for the device 5 times"
    data = load(DEMO)
    turn = next(t for t in data["turns"] if t["round_index"] == 1 and t.get("evaluation"))
    turn["evaluation"]["notes"] = [note]
    run = trajectory_import(data, owner=admin_user)
    stored = Turn.objects.get(run=run, round_index=1, debug_index=turn["debug_index"])
    assert stored.notes == [note]
    assert not Turn.objects.get(run=run, kind=TurnKind.BASELINE).notes

    panel = page_for(admin_user).get(reverse("runs:panel", args=[run.pk]),
                                     {"turn": f"1.{turn['debug_index']}"}).content.decode()
    assert f'<ul class="turn-notes" aria-label="How this turn was built and timed"><li>{note}</li></ul>' in panel
    assert api_for(admin_user).get(reverse("api:turn-detail", args=[stored.pk])).json()["notes"] == [note]
    exported = json.loads(json.dumps(trajectory_export(run)))
    assert next(t for t in exported["turns"] if t["round_index"] == 1
                and t["debug_index"] == turn["debug_index"])["evaluation"]["notes"] == [note]


@pytest.mark.parametrize("notes, message", [
    (5, r"turn 1\.\d: evaluation.notes must be a list of strings, not 5"),
    ("timed alone", r"turn 1\.\d: evaluation.notes must be a list of strings, not 'timed alone'"),
    ([1], r"turn 1\.\d: evaluation.notes must be a list of strings, not \[1\]"),
])
def test_a_turn_whose_notes_are_not_a_list_of_strings_is_refused_naming_it_and_nothing_is_stored(
        library, admin_user, notes, message):
    data = load(DEMO)
    next(t for t in data["turns"] if t["round_index"] == 1 and t.get("evaluation"))["evaluation"]["notes"] = notes
    with pytest.raises(TrajectoryImportError, match=message):
        trajectory_import(data, owner=admin_user)
    assert not Run.objects.exists() and not Turn.objects.exists()


def test_a_turn_with_a_malformed_evaluation_is_refused_naming_the_turn_and_the_field(library, admin_user):
    data = load(DEMO)
    del next(t for t in data["turns"] if t["round_index"] == 2 and t.get("evaluation"))["evaluation"]["verdict"]
    with pytest.raises(TrajectoryImportError, match=r"turn 2\.\d is not a turn this KernelWeb recorded "
                                                    r"\(KeyError: 'verdict'\)"):
        trajectory_import(data, owner=admin_user)
    assert not Run.objects.exists()
