"""Every state-changing page refuses a POST without the CSRF token, and a websocket from another
origin is refused: the browser-facing checks of the security model (docs/architecture.md,
"Design principles")."""

import logging

import pytest
from django.test import Client
from django.urls import reverse

from apps.llm.models import LLMEndpoint
from apps.runs.models import Run, Turn

pytestmark = pytest.mark.django_db


def test_every_page_post_without_the_csrf_token_is_refused_and_changes_nothing(user, task, make_run):
    run = make_run(user)
    turn = Turn.objects.create(run=run, round_index=0, kind="baseline", code="// base", verdict="ok")
    endpoint = LLMEndpoint.objects.create(name="mine", base_url="https://a.example/v1", owner=user)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    posts = [
        (reverse("runs:launch"), {"tasks": [task.pk], "model": "m", "rounds": 1, "debug_rounds": 0,
                                  "profile_mode": "none", "temperature": 0}),
        (reverse("runs:cancel", args=[run.pk]), {}),
        (reverse("runs:manual", args=[run.pk]), {"code": "// mine"}),
        (reverse("runs:share", args=[run.pk]), {"a": turn.pk, "b": turn.pk}),
        (reverse("runs:task_evaluate", args=[task.pk]), {"code": "// mine"}),
        (reverse("llm:create"), {"name": "x", "base_url": "https://b.example/v1"}),
        (reverse("llm:delete", args=[endpoint.pk]), {}),
        (reverse("logout"), {}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == 403, url
    assert Run.objects.count() == 1 and Run.objects.get().status == "queued"
    assert Turn.objects.count() == 1 and LLMEndpoint.objects.count() == 1


def test_an_llm_error_never_carries_the_api_key_into_the_call_record_or_the_logs(caplog):
    from testing.scripted_llm import ScriptedLLM
    from worker.agents.llm import LLMError, OpenAIChatClient, RetryPolicy

    secret = "sk-live-do-not-leak-0123456789"
    steps = [{"status": 401, "body": {"error": {"message": "Incorrect API key provided: sk-live-do-not-leak-01*****"}}}]
    caplog.set_level(logging.DEBUG)
    with ScriptedLLM(steps) as server:
        client = OpenAIChatClient(server.base_url, secret, "gpt-test", retry=RetryPolicy(max_attempts=1))
        with pytest.raises(LLMError) as failure:
            client.chat([{"role": "user", "content": "hi"}])
    assert secret not in failure.value.message and secret not in " ".join(failure.value.attempt_errors)
    assert secret not in caplog.text
