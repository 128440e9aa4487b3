"""The endpoint page's connection test, per-model prices and windows, learned refusals, the launch form's
warning and the LLM-calls tab, against the scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.llm.connection import run_connection_test
from apps.llm.models import EndpointModel, LLMEndpoint
from apps.llm.services import client_for
from apps.runs.forms import LaunchForm
from apps.runs.models import AgentCall, Turn
from apps.runs.trajectory_export import trajectory_export
from testing.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.django_db

ANSWER = [{"content": "ready", "repeat": 10}]


@pytest.fixture
def local(settings):
    settings.LLM_ENDPOINT_ALLOWED_HOSTS = ["127.0.0.1"]  # the scripted server is a local model server


def endpoint_at(server, owner, models=("served",), name="lab"):
    return LLMEndpoint.objects.create(name=name, base_url=server.base_url, owner=owner, model_names=list(models))


def test_a_passing_test_reports_each_model_and_stores_the_outcome_and_the_listed_window(local, user):
    with ScriptedLLM(ANSWER, quirks="vllm", models=["served", "other"]) as server:
        endpoint = endpoint_at(server, user)
        report = run_connection_test(endpoint)
    assert report.ok and report.listed == ["served", "other"] and report.listing_error == ""
    (result,) = report.models
    assert (result.model, result.ok, result.answer, result.listed) == ("served", True, "ready", True)
    assert result.tokens_in > 0 and result.latency_s is not None
    assert (result.context_window, result.window_source) == (32768, "server /models")
    assert result.cost_usd is None  # no price for a local model: unknown, not $0
    endpoint.refresh_from_db()
    assert endpoint.last_test_ok and endpoint.last_passed_at == endpoint.last_test_at
    assert endpoint.last_test["models"][0]["model"] == "served"
    assert EndpointModel.objects.get(endpoint=endpoint, model="served").server_context_window == 32768


def test_a_refused_temperature_is_reported_and_runs_leave_it_out_from_the_first_call(local, user):
    with ScriptedLLM(ANSWER, quirks={"refuse_params": ["temperature"]}, models=["served"]) as server:
        endpoint = endpoint_at(server, user)
        report = run_connection_test(endpoint)
        assert report.ok and "refused temperature=0.2" in report.models[0].notes[0]
        assert EndpointModel.objects.get(endpoint=endpoint, model="served").refused_params == ["temperature"]
        client_for(endpoint, "served", timeout_s=5).chat([{"role": "user", "content": "go"}], temperature=0.2)
    assert len(server.refused) == 1 and "temperature" not in server.requests[-1].body


def test_a_failing_model_fails_the_test_and_keeps_the_last_pass(local, user):
    with ScriptedLLM([{"status": 404, "repeat": 2}], models=["served"]) as server:
        endpoint = endpoint_at(server, user, models=("served", "typo-model"))
        report = run_connection_test(endpoint)
    assert not report.ok
    assert [m.ok for m in report.models] == [False, False]
    assert "404" in report.models[0].error and report.models[1].listed is False
    endpoint.refresh_from_db()
    assert endpoint.last_test_ok is False and endpoint.last_passed_at is None


def test_the_ssrf_rules_apply_before_anything_is_sent(settings, user):
    settings.LLM_ENDPOINT_ALLOWED_HOSTS = []
    with ScriptedLLM(ANSWER) as server:
        endpoint = endpoint_at(server, user)
        report = run_connection_test(endpoint)
    assert not report.ok and "loopback" in report.error and server.requests == []
    endpoint.refresh_from_db()
    assert endpoint.last_test_ok is False


def test_the_page_runs_the_test_and_shows_latency_tokens_cost_and_refusals(local, client, user):
    client.force_login(user)
    with ScriptedLLM(ANSWER, quirks={"refuse_params": ["temperature"], "reasoning": "reasoning_content",
                                     "reasoning_tokens": True}, models=["served"]) as server:
        endpoint = endpoint_at(server, user)
        response = client.post(reverse("llm:test", args=[endpoint.pk]), {"models": ["served"]})
        assert response.status_code == 302 and response.url.endswith("#connection-test")
        page = client.get(response.url).content.decode()
        fragment = client.post(reverse("llm:test", args=[endpoint.pk]), {"models": ["served"]},
                               HTTP_HX_REQUEST="true").content.decode()
    assert "Passed" in page and "refused temperature=0.2" in page and "unknown" in page
    assert 'id="connection-test"' in fragment and "temperature=0.2 not sent" in fragment
    assert "<code>temperature</code>" in page  # the "in use" table lists what the server refuses


def test_the_api_runs_the_test_for_the_owner_only(local, client, user, other_user):
    with ScriptedLLM(ANSWER, models=["served"]) as server:
        endpoint = endpoint_at(server, user)
        client.force_login(other_user)
        assert client.post(f"/api/endpoints/{endpoint.pk}/test/", {}, content_type="application/json"
                           ).status_code == 404
        client.force_login(user)
        response = client.post(f"/api/endpoints/{endpoint.pk}/test/", {"models": ["served"]},
                               content_type="application/json")
    assert response.status_code == 200 and response.json()["ok"] is True
    assert response.json()["models"][0]["answer"] == "ready"
    endpoint.refresh_from_db()
    assert endpoint.last_test_ok is True


def formset_data(rows):
    data = {"name": "lab", "base_url": "https://llm.example/v1", "model_names": "", "api_key": "",
            "models-TOTAL_FORMS": str(len(rows)), "models-INITIAL_FORMS": "0", "models-MIN_NUM_FORMS": "0",
            "models-MAX_NUM_FORMS": "1000"}
    for i, row in enumerate(rows):
        data.update({f"models-{i}-{k}": v for k, v in row.items()})
    return data


def test_prices_per_model_are_saved_and_priced_by_runs_over_the_defaults(client, user):
    endpoint = LLMEndpoint.objects.create(name="lab", base_url="https://llm.example/v1", owner=user)
    client.force_login(user)
    response = client.post(reverse("llm:edit", args=[endpoint.pk]), formset_data([
        {"model": "my-llama", "context_window": "16384", "input_per_m": "0.5", "output_per_m": "1.5",
         "reasoning_per_m": "3"},
        {"model": "gpt-4o", "context_window": "", "input_per_m": "", "output_per_m": ""},
    ]))
    assert response.status_code == 302
    client_ = client_for(endpoint, "my-llama", timeout_s=5, discover_windows=False)
    price = client_.prices.price("my-llama")
    assert (price.input_per_m, price.output_per_m, price.reasoning_per_m) == (0.5, 1.5, 3.0)
    assert client_.prices.price("gpt-4o").input_per_m == 2.5  # empty prices: the shipped default
    assert client_.context_window("my-llama") == 16384
    page = client.get(reverse("llm:edit", args=[endpoint.pk])).content.decode()
    assert "set here" in page and "shipped default" in page


def test_half_a_price_is_refused_with_a_reason_and_nothing_is_saved(client, user):
    endpoint = LLMEndpoint.objects.create(name="lab", base_url="https://llm.example/v1", owner=user)
    client.force_login(user)
    response = client.post(reverse("llm:edit", args=[endpoint.pk]), formset_data([
        {"model": "my-llama", "input_per_m": "0.5", "output_per_m": ""},
        {"model": "tiny", "context_window": "10"},
    ]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Give at least the input and output prices" in html and "fewer than 256 tokens" in html
    assert not EndpointModel.objects.exists()


def test_the_launch_form_warns_about_an_endpoint_that_never_passed(user, task):
    endpoint = LLMEndpoint.objects.create(name="lab", base_url="https://llm.example/v1", owner=user)
    form = LaunchForm(data={"endpoint": str(endpoint.pk)}, user=user)
    assert "never been run" in form.endpoint_warnings()[0]
    LLMEndpoint.objects.create(name="other", base_url="https://llm.example/v1", owner=user)
    assert LaunchForm(user=user).endpoint_warnings() == [
        "Never passed a connection test: lab, other (test them on their endpoint pages)."]
    endpoint.last_test_at = endpoint.last_passed_at = endpoint.created_at
    endpoint.last_test_ok = True
    endpoint.save()
    assert LaunchForm(data={"endpoint": str(endpoint.pk)}, user=user).endpoint_warnings() == []
    assert "other: its connection test has never passed" in LaunchForm(user=user).endpoint_warnings()[0]


def test_the_launch_page_shows_the_warning(client, user, task):
    LLMEndpoint.objects.create(name="lab", base_url="https://llm.example/v1", owner=user)
    client.force_login(user)
    html = client.get(reverse("runs:launch")).content.decode()
    assert 'id="endpoint-warnings"' in html and "lab: its connection test has never been run" in html


def test_the_llm_calls_tab_shows_reasoning_window_notes_and_unknown_cost(client, user, make_run):
    run = make_run(user)
    turn = Turn.objects.create(run=run, round_index=1, kind="optimize", code="k", verdict="ok", valid=True, score=1.2)
    AgentCall.objects.create(turn=turn, role="planner", model="r1", messages=[{"role": "user", "content": "p"}],
                             response="the plan", tokens_in=5100, tokens_out=900, reasoning="mull it over",
                             reasoning_tokens=700, context_window=6000, priced=False,
                             notes=["r1 refused temperature=0.2; sent without it"])
    client.force_login(user)
    html = client.get(reverse("runs:detail", args=[run.pk]), {"turn": "1.0"}).content.decode()
    assert "5100" in html and "/ 6000" in html and "<meter" in html
    assert "mull it over" in html and "700" in html and "unknown" in html
    assert "r1 refused temperature=0.2; sent without it" in html
    exported = trajectory_export(run)["turns"][-1]["agent_calls"][0]
    assert (exported["reasoning_tokens"], exported["priced"], exported["context_window"]) == (700, False, 6000)
