"""The REST API: auth, visibility (an invisible object is a 404), launch through LaunchForm, events polling,
filters and pagination, the schema and its locally served docs."""

import json
import re

import pytest
import yaml
from django.contrib.staticfiles import finders
from django.core.cache import cache
from django.core.management import call_command
from rest_framework.test import APIClient

from apps.api.serializers import LaunchSerializer
from apps.catalog.models import Task
from apps.llm.models import LLMEndpoint
from apps.runs.events import event_append
from apps.runs.forms import LaunchForm
from apps.runs.models import AgentCall, Profile, Run, RunStatus, Turn
from apps.runs.services import run_transition

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_throttles():
    cache.clear()  # throttle counters live in the cache; each test starts with a clean slate
    yield
    cache.clear()


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user(username="carol", password="pw-carol-123", is_staff=True)


def signed_in(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def make_turn(run, round_index=0, **fields) -> Turn:
    turn = Turn.objects.create(run=run, round_index=round_index, kind="baseline" if round_index == 0 else "optimize",
                               code="__global__ void vadd_kernel_optimized() {}", compile_command="nvcc -O3",
                               compile_log="ptxas info", results=[{"size": 0, "correct": True}], verdict="ok",
                               valid=True, score=1.5, scheme="coalesce loads", **fields)
    Profile.objects.create(turn=turn, size_index=0, size={"N": 1024}, kernel="vadd_kernel_optimized",
                           bottleneck="memory_bandwidth_bound", filtered_metrics={"dram__throughput": 91.0},
                           full_metrics={"sm__throughput": 12.0, "dram__throughput": 91.0})
    AgentCall.objects.create(turn=turn, role="coder", model="gpt-test", messages=[{"role": "user", "content": "hi"}],
                             response="```cuda\n...\n```", tokens_in=10, tokens_out=20, cost_usd=0.01, latency_s=1.2)
    return turn


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["results"]]


def run_urls(run, turn) -> list[str]:
    return [f"/api/runs/{run.pk}/", f"/api/runs/{run.pk}/turns/", f"/api/turns/{turn.pk}/",
            f"/api/runs/{run.pk}/events/", f"/api/profiles/?turn={turn.pk}", f"/api/profiles/?run={run.pk}"]


# --- authentication ---------------------------------------------------------------------------------


def test_anonymous_requests_are_refused_on_every_endpoint(api, make_run, user, task):
    run = make_run(user, is_public=True)
    turn = make_turn(run)
    for url in ["/api/tasks/", f"/api/tasks/{task.pk}/", "/api/runs/", "/api/endpoints/", "/api/profiles/",
                *run_urls(run, turn)]:
        response = api.get(url)
        assert response.status_code == 401, url
        assert response["WWW-Authenticate"] == "Token", url
    for url in ["/api/runs/", f"/api/runs/{run.pk}/cancel/"]:
        assert api.post(url, {}, format="json").status_code == 401, url
    assert Run.objects.get().status == RunStatus.QUEUED


def test_a_token_obtained_with_the_password_authenticates_requests(api, make_run, user):
    run = make_run(user)
    assert api.post("/api/auth/token/", {"username": "alice", "password": "wrong"}).status_code == 400
    response = api.post("/api/auth/token/", {"username": "alice", "password": "pw-alice-123"}, format="json")
    assert response.status_code == 200
    api.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert ids(api.get("/api/runs/")) == [run.pk]
    api.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert api.get("/api/runs/").status_code == 401


def test_password_guessing_on_the_token_endpoint_is_throttled(api, user):
    # One guess per username: the throttle, not the per-username lockout (test_login_lockout.py), stops it.
    codes = [api.post("/api/auth/token/", {"username": f"user{i}", "password": f"guess{i}"}).status_code
             for i in range(11)]
    assert codes == [400] * 10 + [429]


def test_a_session_post_without_the_csrf_token_is_refused(user, task, monkeypatch):
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: None)
    client = APIClient(enforce_csrf_checks=True)
    client.login(username="alice", password="pw-alice-123")
    assert client.get("/api/runs/").status_code == 200  # safe methods need no token
    response = client.post("/api/runs/", {"tasks": [task.pk], "model": "m"}, format="json")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    assert Run.objects.count() == 0
    # A token is not ambient (a browser never sends it by itself), so token requests need no CSRF token.
    token = APIClient().post("/api/auth/token/", {"username": "alice", "password": "pw-alice-123"}).json()["token"]
    client.logout()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.post("/api/runs/", {"tasks": [task.pk], "model": "m"}, format="json").status_code == 201


# --- visibility and ownership -----------------------------------------------------------------------


def test_someone_elses_private_run_is_a_404_everywhere(make_run, user, other_user):
    run = make_run(user)
    turn = make_turn(run)
    bob = signed_in(other_user)
    for url in run_urls(run, turn):
        assert bob.get(url).status_code == 404, url
    assert bob.post(f"/api/runs/{run.pk}/cancel/").status_code == 404
    assert ids(bob.get("/api/runs/")) == [] and ids(bob.get("/api/profiles/")) == []
    alice = signed_in(user)
    for url in run_urls(run, turn):
        assert alice.get(url).status_code == 200, url


def test_a_public_run_is_readable_by_others_but_only_its_owner_cancels_it(make_run, user, other_user):
    run = make_run(user, is_public=True)
    turn = make_turn(run)
    bob = signed_in(other_user)
    for url in run_urls(run, turn):
        assert bob.get(url).status_code == 200, url
    response = bob.post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 403 and "owner" in response.json()["detail"]
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED


def test_staff_see_every_run_but_cannot_cancel_others(make_run, user, other_user, staff):
    private = make_run(user)
    turn = make_turn(private)
    bobs = make_run(other_user)
    carol = signed_in(staff)
    assert set(ids(carol.get("/api/runs/"))) == {private.pk, bobs.pk}
    for url in run_urls(private, turn):
        assert carol.get(url).status_code == 200, url
    assert carol.post(f"/api/runs/{private.pk}/cancel/").status_code == 403


def test_the_owner_cancels_and_a_finished_run_answers_409(make_run, user):
    run = make_run(user)
    alice = signed_in(user)
    response = alice.post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == RunStatus.CANCELLED
    response = alice.post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 409
    assert response.json()["detail"] == f"Run {run.pk} is already cancelled; nothing to cancel."


# --- launch -----------------------------------------------------------------------------------------


def test_launch_creates_one_run_per_task_and_dispatches_after_commit(
    user, task, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: sent.append(run_id))
    bf16 = Task.objects.get(pk=task.pk)
    bf16.pk, bf16.precision = None, "bf16"
    bf16.save()
    endpoint = LLMEndpoint.objects.create(name="lab", base_url="http://127.0.0.1:9/v1", model_names=["base", "big"])
    body = {"tasks": [task.pk, bf16.pk], "endpoint": endpoint.pk, "model": "base", "coder_model": "big",
            "rounds": 2, "debug_rounds": 1, "profile_mode": "none", "temperature": 0.3, "seed": 11,
            "token_budget": 50000, "cost_budget_usd": 1.25, "is_public": True}
    with django_capture_on_commit_callbacks(execute=True):
        response = signed_in(user).post("/api/runs/", body, format="json")
    assert response.status_code == 201, response.content
    created = response.json()["runs"]
    runs = list(Run.objects.order_by("pk"))
    assert [r["id"] for r in created] == [r.pk for r in runs] and sent == [r.pk for r in runs]
    assert {r.task for r in runs} == {task, bf16}
    assert all((r.owner, r.endpoint, r.agent_models, r.rounds, r.debug_rounds, r.seed, r.is_public)
               == (user, endpoint, {"coder": "big"}, 2, 1, 11, True) for r in runs)
    assert created[0]["config"]["cost_budget_usd"] == 1.25 and created[0]["status"] == "queued"


def test_launch_fills_omitted_settings_with_the_launch_page_defaults(user, task, monkeypatch):
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: None)
    response = signed_in(user).post("/api/runs/", {"tasks": [task.pk], "model": "m"}, format="json")
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert (run.rounds, run.debug_rounds, run.profile_mode, run.timing_protocol, run.temperature, run.is_public) == (
        3, 3, "filtered", "synchronized", 0.2, False)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"tasks": [999999]}, "tasks", "999999 is not one of the available choices"),
        ({"tasks": []}, "tasks", "This field is required"),
        ({"rounds": 31}, "rounds", "less than or equal to 30"),
        ({"rounds": -1}, "rounds", "greater than or equal to 0"),
        ({"model": "zzz"}, "model", "lab offers: a, b"),
        ({"debug_model": "c"}, "debug_model", "lab offers: a, b"),
        ({"endpoint": "bobs"}, "endpoint", "Select a valid choice"),
        ({"profile_mode": "bogus"}, "profile_mode", "Select a valid choice"),
        ({"timing_protocol": "fastest"}, "timing_protocol", "Select a valid choice"),
    ],
)
def test_launch_rejects_bad_input_with_field_errors_and_creates_nothing(user, other_user, task, change, field,
                                                                        message, monkeypatch):
    sent = []
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: sent.append(run_id))
    lab = LLMEndpoint.objects.create(name="lab", base_url="http://127.0.0.1:9/v1", model_names=["a", "b"])
    bobs = LLMEndpoint.objects.create(name="bobs", base_url="http://127.0.0.1:9/v1", owner=other_user)
    body = {"tasks": [task.pk], "endpoint": lab.pk, "model": "a", "rounds": 1, **change}
    if body["endpoint"] == "bobs":
        body["endpoint"] = bobs.pk
    response = signed_in(user).post("/api/runs/", body, format="json")
    assert response.status_code == 400
    errors = response.json()
    assert field in errors and any(message in text for text in errors[field]), errors
    assert Run.objects.count() == 0 and sent == []


def test_launch_refuses_a_body_that_is_not_an_object(user):
    response = signed_in(user).post("/api/runs/", [1, 2], format="json")
    assert response.status_code == 400 and response.json() == {"non_field_errors": ["Send a JSON object."]}


def test_the_documented_launch_body_names_exactly_the_form_fields():
    assert set(LaunchSerializer().fields) == set(LaunchForm.base_fields)


# --- events polling ---------------------------------------------------------------------------------


def test_events_after_a_seq_return_only_later_ones_until_the_run_finishes(make_run, user):
    run = make_run(user)  # seq 1: run.queued
    event_append(run.pk, "agent.message", {"text": "hello"})  # seq 2
    alice = signed_in(user)
    page = alice.get(f"/api/runs/{run.pk}/events/?after=1").json()
    assert [e["seq"] for e in page["events"]] == [2] and page["events"][0]["payload"] == {"text": "hello"}
    assert (page["last_seq"], page["finished"], page["status"]) == (2, False, "queued")
    assert alice.get(f"/api/runs/{run.pk}/events/?after=2").json() == {
        "events": [], "last_seq": 2, "finished": False, "status": "queued"}

    run_transition(run.pk, RunStatus.RUNNING)  # seq 3
    run_transition(run.pk, RunStatus.SUCCEEDED)  # seq 4
    page = alice.get(f"/api/runs/{run.pk}/events/?after=2&limit=1").json()
    assert [e["type"] for e in page["events"]] == ["run.running"]
    assert (page["last_seq"], page["finished"]) == (3, False)  # ended, but one event is still to fetch
    page = alice.get(f"/api/runs/{run.pk}/events/?after=3").json()
    assert [e["type"] for e in page["events"]] == ["run.succeeded"]
    assert (page["last_seq"], page["finished"]) == (4, True)


@pytest.mark.parametrize("query", ["after=-1", "after=x", "limit=0", "limit=1001"])
def test_events_reject_bad_parameters(make_run, user, query):
    run = make_run(user)
    assert signed_in(user).get(f"/api/runs/{run.pk}/events/?{query}").status_code == 400


# --- lists: filters, ordering, pagination -----------------------------------------------------------


def test_runs_list_filters(make_run, user, other_user, task):
    other_task = Task.objects.create(**{**{f.name: getattr(task, f.name) for f in Task._meta.concrete_fields
                                           if f.name != "id"}, "suite": "kb", "operator": "relu",
                                        "category": "activation"})
    mine = make_run(user)
    theirs = make_run(other_user, is_public=True)
    Run.objects.filter(pk=theirs.pk).update(status=RunStatus.SUCCEEDED, task=other_task, model="big")
    alice = signed_in(user)
    assert set(ids(alice.get("/api/runs/"))) == {mine.pk, theirs.pk}
    assert ids(alice.get("/api/runs/?owner=me")) == [mine.pk]
    assert ids(alice.get("/api/runs/?status=succeeded")) == [theirs.pk]
    assert ids(alice.get(f"/api/runs/?task={task.pk}")) == [mine.pk]
    assert ids(alice.get("/api/runs/?suite=kb")) == [theirs.pk]
    assert ids(alice.get("/api/runs/?category=activation&model=big")) == [theirs.pk]
    assert ids(alice.get("/api/runs/?category=activation&model=scripted")) == []
    for query in ("status=bogus", "owner=bob", "ordering=id", "task=abc"):
        assert alice.get(f"/api/runs/?{query}").status_code == 400, query


def test_runs_list_orderings_put_unscored_runs_last(make_run, user):
    low, none, high = make_run(user), make_run(user), make_run(user)
    Run.objects.filter(pk=low.pk).update(best_score=1.1, cost_usd=3)
    Run.objects.filter(pk=high.pk).update(best_score=4.0, cost_usd=1)
    Run.objects.filter(pk=none.pk).update(cost_usd=2)
    alice = signed_in(user)
    assert ids(alice.get("/api/runs/")) == [high.pk, none.pk, low.pk]  # newest first
    assert ids(alice.get("/api/runs/?ordering=created_at")) == [low.pk, none.pk, high.pk]
    assert ids(alice.get("/api/runs/?ordering=-best_score")) == [high.pk, low.pk, none.pk]
    assert ids(alice.get("/api/runs/?ordering=best_score")) == [low.pk, high.pk, none.pk]
    assert ids(alice.get("/api/runs/?ordering=cost_usd")) == [high.pk, none.pk, low.pk]
    assert ids(alice.get("/api/runs/?ordering=-cost_usd")) == [low.pk, none.pk, high.pk]


def test_lists_are_paginated_50_by_default_and_at_most_200(user, task):
    Run.objects.bulk_create(Run(owner=user, task=task, model="m") for _ in range(205))
    alice = signed_in(user)
    first = alice.get("/api/runs/").json()
    assert (first["count"], len(first["results"])) == (205, 50) and "page=2" in first["next"]
    last = alice.get("/api/runs/?page=5").json()
    assert len(last["results"]) == 5 and last["next"] is None
    assert len(alice.get("/api/runs/?page_size=10").json()["results"]) == 10
    assert len(alice.get("/api/runs/?page_size=1000").json()["results"]) == 200
    assert alice.get("/api/runs/?page=99").status_code == 404


def test_tasks_list_filters_and_detail(user, task):
    Task.objects.create(**{**{f.name: getattr(task, f.name) for f in Task._meta.concrete_fields if f.name != "id"},
                           "operator": "gemm", "title": "Matrix multiply", "precision": "bf16"})
    Task.objects.create(**{**{f.name: getattr(task, f.name) for f in Task._meta.concrete_fields if f.name != "id"},
                           "operator": "hidden", "enabled": False})
    alice = signed_in(user)
    assert len(ids(alice.get("/api/tasks/"))) == 2
    assert ids(alice.get("/api/tasks/?precision=fp32")) == [task.pk]
    assert ids(alice.get("/api/tasks/?operator=vadd&suite=testsuite&category=dense_linear_algebra")) == [task.pk]
    assert len(ids(alice.get("/api/tasks/?q=matrix"))) == 1
    assert alice.get("/api/tasks/?precision=fp64").status_code == 400
    detail = alice.get(f"/api/tasks/{task.pk}/").json()
    assert detail["sizes"] == [{"N": 1024}] and detail["complexity"] == "N"
    assert detail["baseline_source"] == "// baseline" and detail["interface"].startswith("void vadd(")
    hidden = Task.objects.get(operator="hidden")
    assert alice.get(f"/api/tasks/{hidden.pk}/").status_code == 404


# --- turns, profiles, endpoints ---------------------------------------------------------------------


def test_turn_summaries_leave_out_code_and_the_turn_detail_has_everything(make_run, user):
    run = make_run(user)
    baseline = make_turn(run)
    better = make_turn(run, round_index=1, parent=baseline, llm_seconds=3.5)
    alice = signed_in(user)
    summaries = alice.get(f"/api/runs/{run.pk}/turns/").json()["results"]
    assert [t["id"] for t in summaries] == [baseline.pk, better.pk]
    assert "code" not in summaries[1] and summaries[1]["llm_seconds"] == 3.5 and summaries[1]["parent"] == baseline.pk
    turn = alice.get(f"/api/turns/{better.pk}/").json()
    assert turn["code"].startswith("__global__") and turn["compile_command"] == "nvcc -O3"
    assert turn["compile_log"] == "ptxas info" and turn["results"] == [{"size": 0, "correct": True}]
    assert turn["profiles"] == [{"id": better.profiles.get().pk, "size_index": 0, "size": {"N": 1024},
                                 "kernel": "vadd_kernel_optimized", "bottleneck": "memory_bandwidth_bound",
                                 "filtered_metrics": {"dram__throughput": 91.0}}]
    call = turn["agent_calls"][0]
    assert (call["role"], call["model"], call["tokens_in"], call["tokens_out"], call["cost_usd"]) == (
        "coder", "gpt-test", 10, 20, 0.01)
    assert call["messages"] == [{"role": "user", "content": "hi"}] and call["response"].startswith("```cuda")


def test_profiles_by_turn_carry_the_full_metric_set(make_run, user):
    run = make_run(user)
    make_turn(run)
    second = make_turn(run, round_index=1)
    alice = signed_in(user)
    profiles = alice.get(f"/api/profiles/?turn={second.pk}").json()["results"]
    assert [p["turn"] for p in profiles] == [second.pk]
    assert profiles[0]["full_metrics"] == {"sm__throughput": 12.0, "dram__throughput": 91.0}
    assert len(ids(alice.get(f"/api/profiles/?run={run.pk}"))) == 2
    assert alice.get("/api/profiles/?turn=999999").status_code == 404


def test_endpoints_list_yours_and_the_shared_ones_never_the_key(user, other_user):
    shared = LLMEndpoint(name="shared", base_url="https://llm.example/v1", model_names=["m"])
    shared.set_api_key("sk-shared-SECRET-1")
    shared.save()
    LLMEndpoint.objects.create(name="bobs", base_url="https://bob.example/v1", owner=other_user)
    mine = LLMEndpoint.objects.create(name="mine", base_url="https://me.example/v1", owner=user)
    response = signed_in(user).get("/api/endpoints/")
    assert response.json()["results"] == [
        {"id": mine.pk, "name": "mine", "base_url": "https://me.example/v1", "model_names": [], "has_key": False,
         "shared": False},
        {"id": shared.pk, "name": "shared", "base_url": "https://llm.example/v1", "model_names": ["m"],
         "has_key": True, "shared": True},
    ]


def test_an_endpoint_api_key_never_appears_in_any_response(make_run, user, task, monkeypatch):
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: None)
    secret = "sk-live-NEVER-ECHO-42"
    endpoint = LLMEndpoint(name="lab", base_url="https://llm.example/v1", model_names=["m"], owner=user)
    endpoint.set_api_key(secret)
    endpoint.save()
    run = make_run(user)
    Run.objects.filter(pk=run.pk).update(endpoint=endpoint)
    turn = make_turn(run)
    alice = signed_in(user)
    bodies = [alice.post("/api/runs/", {"tasks": [task.pk], "endpoint": endpoint.pk, "model": "m"},
                         format="json").content]
    for url in ["/api/tasks/", "/api/runs/", "/api/endpoints/", "/api/profiles/", "/api/schema/",
                "/api/schema/?format=json", "/api/docs/", *run_urls(run, turn)]:
        response = alice.get(url)
        assert response.status_code == 200, url
        bodies.append(response.content)
    for body in bodies:
        assert secret.encode() not in body and endpoint.api_key_encrypted.encode() not in body


# --- schema and docs --------------------------------------------------------------------------------

API_PATHS = {"/api/tasks/", "/api/tasks/{id}/", "/api/runs/", "/api/runs/{id}/", "/api/runs/{id}/cancel/",
             "/api/runs/{id}/turns/", "/api/runs/{id}/events/", "/api/turns/{id}/", "/api/profiles/",
             "/api/endpoints/", "/api/endpoints/{id}/test/", "/api/auth/token/", "/api/runs/{id}/share/",
             "/api/shares/{key}/",
             "/api/experiments/", "/api/experiments/{id}/", "/api/experiments/{id}/cancel/",
             "/api/experiments/{id}/rerun-failed/", "/api/experiments/{id}/analyses/", "/api/experiments/compare/",
             "/api/workers/"}


def test_the_schema_validates_without_warnings_and_lists_every_path(tmp_path):
    target = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    assert schema["openapi"].startswith("3.") and schema["info"]["title"] == "KernelWeb API"
    assert set(schema["paths"]) == API_PATHS
    assert set(schema["paths"]["/api/runs/"]) == {"get", "post"}
    assert "LaunchRequest" in schema["components"]["schemas"]


def test_the_schema_is_served_publicly(api):
    response = api.get("/api/schema/?format=json")
    assert response.status_code == 200
    assert set(json.loads(response.content)["paths"]) == API_PATHS
    assert api.get("/api/schema/").content.startswith(b"openapi: 3.")


def test_the_docs_page_loads_swagger_ui_from_local_static_files(api):
    response = api.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    sources = re.findall(r'<(?:script|link)\b[^>]*\b(?:src|href)="([^"]*)"', html)
    assert len(sources) >= 4  # favicon, css, bundle, standalone preset
    # the init script is served by the view itself (the split view: no inline script under the CSP)
    assert "/api/docs/?script=" in sources and "<script>" not in html
    script = api.get("/api/docs/?script=")
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    files = [source for source in sources if source != "/api/docs/?script="]
    assert all(s.startswith(("/static/drf_spectacular_sidecar/", "/static/css/")) for s in files), sources
    assert "http://" not in html and "https://" not in html
    for source in files:
        assert finders.find(source.removeprefix("/static/")), source


# --- share links ----------------------------------------------------------------------------------------


def test_sharing_two_turns_gives_one_public_immutable_link(make_run, user, other_user):
    run = make_run(user)
    base, best = make_turn(run, 0), make_turn(run, 1)
    first = signed_in(user).post(f"/api/runs/{run.pk}/share/", {"a": base.pk, "b": best.pk}, format="json")
    again = signed_in(user).post(f"/api/runs/{run.pk}/share/", {"a": base.pk, "b": best.pk}, format="json")
    assert first.status_code == again.status_code == 201
    key = first.json()["key"]
    assert again.json()["key"] == key and first.json()["url"] == f"/s/{key}/"
    shared = APIClient().get(f"/api/shares/{key}/")  # anonymous: the link is public
    assert shared.status_code == 200 and shared.json()["snapshot"]["b"]["code"] == best.code
    assert APIClient().get("/api/shares/0000000000deadbeef00/").status_code == 404
    # a private run of someone else cannot be shared, a foreign turn id is refused
    assert signed_in(other_user).post(f"/api/runs/{run.pk}/share/", {"a": base.pk, "b": best.pk},
                                      format="json").status_code == 404
    other = make_turn(make_run(user), 0)
    bad = signed_in(user).post(f"/api/runs/{run.pk}/share/", {"a": base.pk, "b": other.pk}, format="json")
    assert bad.status_code == 400 and "is not a turn of run" in bad.json()["detail"]
