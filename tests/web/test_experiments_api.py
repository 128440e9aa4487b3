"""The experiment endpoints of the REST API: the same visibility and ownership as the pages (invisible is a
404, someone else's is a 403 to change), launch through ExperimentLaunchForm, and the analyses as JSON on the
hand-checked experiment of test_experiments_pages (TRIO)."""

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from apps.api.experiment_serializers import ExperimentLaunchSerializer
from apps.experiments.forms import ExperimentLaunchForm
from apps.experiments.models import Experiment
from apps.runs.models import Run, RunStatus
from apps.runs.services import RunConfig
from tests.web.test_experiments import _finish
from tests.web.test_experiments_pages import _member_runs, _succeed, build_trio, launch, three_tasks

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_worker")]
CB, ML, MB = "compute_bound", "memory_latency_bound", "memory_bandwidth_bound"


@pytest.fixture
def tasks(task):
    return three_tasks(task)


@pytest.fixture
def trio(user, tasks):
    return build_trio(user, tasks)


@pytest.fixture(autouse=True)
def _fresh_throttles():
    cache.clear()
    yield
    cache.clear()


def signed_in(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def experiment_urls(pk: int) -> list[str]:
    return [f"/api/experiments/{pk}/", f"/api/experiments/{pk}/analyses/",
            f"/api/experiments/{pk}/analyses/?precision=fp32", f"/api/experiments/compare/?ids={pk},{pk}0"]


def test_anonymous_requests_are_refused(trio):
    api = APIClient()
    for url in ["/api/experiments/", *experiment_urls(trio.pk)]:
        assert api.get(url).status_code == 401, url
    for action in ("cancel", "rerun-failed"):
        assert api.post(f"/api/experiments/{trio.pk}/{action}/").status_code == 401
    assert api.post("/api/experiments/", {"name": "x"}, format="json").status_code == 401


def test_a_token_works_like_on_every_other_endpoint(user, trio):
    from rest_framework.authtoken.models import Token

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert [e["id"] for e in api.get("/api/experiments/").json()["results"]] == [trio.pk]


def test_someone_elses_private_experiment_is_a_404_everywhere(other_user, trio, tasks):
    api = signed_in(other_user)
    for url in experiment_urls(trio.pk)[:3]:
        assert api.get(url).status_code == 404, url
    for action in ("cancel", "rerun-failed"):
        assert api.post(f"/api/experiments/{trio.pk}/{action}/").status_code == 404
    assert api.get("/api/experiments/").json()["results"] == []
    mine = launch(other_user, tasks[:1], name="bobs")
    assert api.get(f"/api/experiments/compare/?ids={mine.pk},{trio.pk}").status_code == 404


def test_a_public_experiment_is_readable_but_only_its_owner_or_staff_change_it(user, other_user, tasks,
                                                                               django_user_model):
    experiment = launch(user, tasks[:2], name="shared", is_public=True)
    api = signed_in(other_user)
    assert api.get(f"/api/experiments/{experiment.pk}/").json()["name"] == "shared"
    response = api.post(f"/api/experiments/{experiment.pk}/cancel/")
    assert response.status_code == 403 and "owner" in response.json()["detail"]
    assert api.post(f"/api/experiments/{experiment.pk}/rerun-failed/").status_code == 403
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.QUEUED}
    staff = django_user_model.objects.create_user(username="root", password="pw-root-123", is_staff=True)
    assert signed_in(staff).post(f"/api/experiments/{experiment.pk}/cancel/").json() == {"cancelled": 2}


def test_the_detail_has_the_progress_per_task_and_seed(user, trio):
    data = signed_in(user).get(f"/api/experiments/{trio.pk}/").json()
    assert (data["name"], data["owner"], data["seeds"], data["trials"], data["succeeded"], data["active"]) == (
        "Full R3 D3", "alice", 1, 3, 2, 0)
    assert data["config"]["model"] == "scripted" and data["config"]["rounds"] == 3
    progress = data["progress"]
    assert (progress["total"], progress["done"], progress["is_active"], progress["rerunnable"]) == (3, 3, False, 1)
    assert progress["counts"]["succeeded"] == 2 and progress["counts"]["failed"] == 1
    failed = next(r for r in progress["rows"] if r["status"] == "failed")
    assert (failed["operator"], failed["precision"], failed["attempt"]) == ("vadd", "bf16", 0)
    assert failed["error"].startswith("No NVIDIA GPU")


def test_launch_creates_the_selection_times_the_seeds(user, tasks):
    response = signed_in(user).post("/api/experiments/", {
        "name": "bf16 sweep", "suite": "testsuite", "precision": "bf16", "seeds": 3, "model": "m",
        "debug_rounds": 0, "is_public": True}, format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert (data["trials"], data["active"], data["selection"], data["is_public"]) == (
        3, 3, "suite testsuite, precision bf16", True)
    assert data["config"]["debug_rounds"] == 0 and data["config"]["rounds"] == 3  # the page's default
    experiment = Experiment.objects.get()
    assert {m.task_id for m in experiment.members.all()} == {tasks[1].pk}


@pytest.mark.parametrize(("body", "field", "message"), [
    ({"model": "m"}, "name", "required"),
    ({"name": "x", "model": "m"}, "non_field_errors", "Choose the tasks"),
    ({"name": "x", "model": "m", "category": "nope"}, "category", "not one of the available choices"),
    ({"name": "x", "model": "m", "tasks": [999999]}, "tasks", "999999"),
    ({"name": "x", "model": "m", "suite": "testsuite", "seeds": 0}, "seeds", "greater than or equal to 1"),
])
def test_launch_rejects_bad_input_with_field_errors_and_creates_nothing(user, tasks, body, field, message):
    response = signed_in(user).post("/api/experiments/", body, format="json")
    assert response.status_code == 400 and message in " ".join(response.json()[field])
    assert not Experiment.objects.exists() and not Run.objects.exists()


def test_the_documented_launch_body_names_exactly_the_form_fields():
    assert set(ExperimentLaunchSerializer().fields) == set(ExperimentLaunchForm.base_fields)


def test_cancel_and_rerun_failed(user, tasks):
    experiment = launch(user, tasks)
    api = signed_in(user)
    assert api.post(f"/api/experiments/{experiment.pk}/cancel/").json() == {"cancelled": 3}
    assert api.post(f"/api/experiments/{experiment.pk}/cancel/").json() == {"cancelled": 0}
    again = api.post(f"/api/experiments/{experiment.pk}/rerun-failed/").json()["runs"]
    assert len(again) == 3 and set(Run.objects.filter(pk__in=again).values_list("status", flat=True)) == {"queued"}
    assert api.get(f"/api/experiments/{experiment.pk}/").json()["progress"]["counts"]["queued"] == 3


def test_analyses_give_every_table_with_the_hand_checked_numbers(user, trio):
    data = signed_in(user).get(f"/api/experiments/{trio.pk}/analyses/").json()
    assert (data["experiment"], data["precision"], data["trials"], data["correct"]) == (trio.pk, "all", 3, 2)
    assert set(data["tables"]) == {"success_curve", "fast_p", "geomean_speedup", "operators", "library_comparison",
                                   "cost", "bottleneck_migration", "outcomes"}
    fast = {r["p"]: r["fast_p"] for r in data["tables"]["fast_p"]["rows"]}
    assert fast == pytest.approx({0: 2 / 3, 0.5: 2 / 3, 0.8: 2 / 3, 1: 1 / 3, 1.5: 1 / 3, 2: 1 / 3})
    curve = {(r["tau"], r["precision"]): r["rate"] for r in data["tables"]["success_curve"]["rows"]}
    assert curve[(1, "all")] == pytest.approx(1 / 3) and curve[(0, "fp32")] == 1.0 and curve[(0, "bf16")] == 0.0
    assert data["tables"]["geomean_speedup"]["rows"] == [{"correct": 2, "trials": 3, "geomean_speedup": 2.0}]
    migration = {r["baseline \\ best"]: r for r in data["tables"]["bottleneck_migration"]["rows"]}
    assert (migration[ML][CB], migration[ML][MB], migration["total"]["total"]) == (1, 1, 2)
    assert [s["label"] for s in data["charts"]["success_curve"]["series"]] == ["all", "bf16", "fp32"]


def test_analyses_per_precision_and_a_bad_precision_is_a_400(user, trio):
    api = signed_in(user)
    data = api.get(f"/api/experiments/{trio.pk}/analyses/?precision=bf16").json()
    assert (data["trials"], data["correct"]) == (1, 0)
    assert {r["fast_p"] for r in data["tables"]["fast_p"]["rows"]} == {0.0}
    assert [r["precision"] for r in data["tables"]["outcomes"]["rows"]] == ["bf16"]
    response = api.get(f"/api/experiments/{trio.pk}/analyses/?precision=fp16")
    assert response.status_code == 400 and "precision" in response.json()


def test_compare_gives_the_ablation_over_the_shared_tasks(user, trio, tasks):
    no_debug = launch(user, tasks[:2], name="no debug", config=RunConfig(model="scripted", debug_rounds=0))
    runs = _member_runs(no_debug)
    _succeed(runs[("vadd", "fp32")], 1.5, (1.5,), ML, MB, 100, "0.01")
    _finish(runs[("vadd", "bf16")], RunStatus.CANCELLED)
    api = signed_in(user)
    data = api.get(f"/api/experiments/compare/?ids={trio.pk},{no_debug.pk}").json()
    assert (data["experiments"], data["tasks"]) == ([trio.pk, no_debug.pk], 2)
    rows = {r["metric"]: r for r in data["tables"]["ablation"]["rows"]}
    full, nd = f"#{trio.pk} Full R3 D3", f"#{no_debug.pk} no debug"
    assert (rows["debug rounds D"][full], rows["debug rounds D"][nd]) == ("3", "0")
    assert (rows["success P>0"][full], rows["success P>0"][nd]) == (0.5, 0.5)
    assert (rows["success P>2"][full], rows["success P>2"][nd]) == (0.5, 0.0)  # 2.5 vs 1.5
    assert (rows["fast_1"][full], rows["fast_1"][nd]) == (0.5, 0.5)
    assert [s["label"] for s in data["charts"]["fast_p"]["series"]] == [full, nd]
    assert api.get(f"/api/experiments/compare/?ids={trio.pk}").status_code == 400
    assert api.get(f"/api/experiments/compare/?ids={trio.pk},{trio.pk}").status_code == 400
    assert api.get(f"/api/experiments/compare/?ids={trio.pk},999999").status_code == 404
