import pytest
from django.core.management import call_command
from django.urls import reverse

from apps.catalog.models import Task
from apps.llm.models import LLMEndpoint
from apps.runs.models import Run, RunStatus

pytestmark = pytest.mark.django_db


def test_login_page_logs_a_user_in_and_logout_needs_post(client, user):
    response = client.post(reverse("login"), {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 302
    assert "alice" in client.get(reverse("home")).content.decode()
    assert client.get(reverse("logout")).status_code == 405  # GET must not log out (CSRF-safe)
    client.post(reverse("logout"))
    assert "Log in" in client.get(reverse("home")).content.decode()


def test_wrong_password_is_refused_with_a_message(client, user):
    response = client.post(reverse("login"), {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_navigation_has_every_section(client, user):
    client.force_login(user)
    html = client.get(reverse("home")).content.decode()
    for label in ("Tasks", "Runs", "Launch", "Showcase"):
        assert f">{label}</a>" in html


def test_runs_are_private_by_default(client, make_run, user, other_user):
    run = make_run(user)
    client.force_login(other_user)
    assert client.get(reverse("runs:detail", args=[run.pk])).status_code == 404
    assert f"#{run.pk}" not in client.get(reverse("runs:list")).content.decode()
    client.force_login(user)
    assert client.get(reverse("runs:detail", args=[run.pk])).status_code == 200


def test_anonymous_visitors_read_public_runs_but_never_private_ones(client, make_run, user):
    private, public = make_run(user), make_run(user, is_public=True)
    assert client.get(reverse("runs:detail", args=[private.pk])).status_code == 404
    assert client.get(reverse("runs:panel", args=[private.pk])).status_code == 404
    assert client.get(reverse("runs:live", args=[private.pk])).status_code == 404
    assert client.get(reverse("runs:detail", args=[public.pk])).status_code == 200
    listing = client.get(reverse("runs:list")).content.decode()
    assert f'href="/runs/{public.pk}/"' in listing and f'href="/runs/{private.pk}/"' not in listing
    assert client.get(reverse("runs:list"), {"owner": "me"}).status_code == 200  # "me" is not offered; ignored


def test_anonymous_visitors_are_sent_to_login_for_anything_that_writes(client, make_run, user, task):
    run = make_run(user, is_public=True)
    for url in (reverse("runs:launch"), reverse("runs:task_evaluate", args=[task.pk])):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login"))
    response = client.post(reverse("runs:cancel", args=[run.pk]))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    html = client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert "Share this comparison" not in html and "Cancel run" not in html


def test_run_page_shows_stored_events_escaped(client, make_run, user):
    from apps.runs.events import event_append

    run = make_run(user)
    event_append(run.pk, "agent.message", {"text": "<script>alert(1)</script>"})
    client.force_login(user)
    html = client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'data-last-seq="2"' in html


def test_launch_form_queues_a_run_and_dispatches_it_after_commit(
    client, user, task, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: sent.append(run_id))
    client.force_login(user)
    form = {"tasks": [task.pk], "model": "gpt-test", "rounds": 2, "debug_rounds": 1,
            "profile_mode": "filtered", "temperature": 0.2}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("runs:launch"), form)
    run = Run.objects.get()
    assert response.status_code == 302 and response.url == reverse("runs:detail", args=[run.pk])
    assert (run.owner, run.rounds, run.debug_rounds, run.status) == (user, 2, 1, RunStatus.QUEUED)
    assert sent == [run.pk]


def test_launch_form_reports_bad_values(client, user, task):
    client.force_login(user)
    response = client.post(reverse("runs:launch"), {"tasks": [task.pk], "model": "", "rounds": -1,
                                                    "debug_rounds": 1, "profile_mode": "bogus", "temperature": 5})
    html = response.content.decode()
    assert response.status_code == 200 and Run.objects.count() == 0
    assert "This field is required" in html and "greater than or equal to 0" in html
    assert "Select a valid choice" in html and "less than or equal to 2.0" in html


def test_every_launch_form_field_has_a_fieldset_and_a_misnamed_one_is_a_template_error(client, user, task):
    from django.template import TemplateSyntaxError

    from apps.runs.forms import LaunchForm
    from apps.runs.templatetags.launch_form import fields_named

    client.force_login(user)
    html = client.get(reverse("runs:launch")).content.decode()
    form = LaunchForm(user=user)
    assert all(f'name="{name}"' in html for name in form.fields), "a launch form field is on no fieldset"
    assert [f.name for f in fields_named(form, "rounds model")] == ["model", "rounds"]  # the form's order
    with pytest.raises(TemplateSyntaxError, match="no field round"):
        fields_named(form, "round debug_rounds")


def test_launch_form_rejects_a_model_the_endpoint_does_not_offer(client, user, task):
    endpoint = LLMEndpoint.objects.create(name="local", base_url="http://127.0.0.1:9/v1", model_names=["a", "b"])
    client.force_login(user)
    response = client.post(reverse("runs:launch"), {"tasks": [task.pk], "endpoint": endpoint.pk, "model": "zzz",
                                                    "coder_model": "b", "debug_model": "c", "rounds": 1,
                                                    "debug_rounds": 0, "profile_mode": "none", "temperature": 0})
    form = response.context["form"]
    assert set(form.errors) == {"model", "debug_model"} and "local offers: a, b" in form.errors["model"][0]
    assert Run.objects.count() == 0


def test_launching_on_several_tasks_queues_one_run_each_with_per_agent_models(
    client, user, task, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: sent.append(run_id))
    other = Task.objects.get(pk=task.pk)
    other.pk, other.precision = None, "bf16"
    other.save()
    client.force_login(user)
    form = {"tasks": [task.pk, other.pk], "model": "base", "coder_model": "big", "rounds": 1, "debug_rounds": 0,
            "profile_mode": "none", "temperature": 0.3, "seed": 11, "token_budget": 50000}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("runs:launch"), form)
    runs = list(Run.objects.order_by("pk"))
    assert response.status_code == 302 and response.url.endswith("?owner=me")
    assert {r.task for r in runs} == {task, other} and sorted(sent) == [r.pk for r in runs]
    assert all(r.agent_models == {"coder": "big"} and r.seed == 11 and r.token_budget == 50000 for r in runs)


def test_only_the_owner_can_cancel(client, make_run, user, other_user):
    run = make_run(user, is_public=True)
    client.force_login(other_user)
    assert client.post(reverse("runs:cancel", args=[run.pk])).status_code == 404
    client.force_login(user)
    client.post(reverse("runs:cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED


def test_task_catalog_groups_precisions_of_an_operator(client, task):
    from apps.catalog.models import Task

    Task.objects.create(**{**{f.name: getattr(task, f.name) for f in Task._meta.concrete_fields if f.name != "id"},
                           "precision": "bf16", "entry_point": "vadd_bf16"})
    html = client.get(reverse("catalog:list")).content.decode()
    assert html.count("<tr>") == 2  # header row + one row for the operator, FP32 and BF16 side by side
    assert ">vadd<" in html and ">vadd_bf16<" in html


def test_admin_lists_every_model(admin_client):
    html = admin_client.get(reverse("admin:index")).content.decode()
    for name in ("Tasks", "Runs", "Turns", "Profiles", "Agent calls", "Run events", "LLM endpoints"):
        assert name in html, name
    for url in ("catalog/task", "runs/run", "runs/turn", "runs/profile", "runs/agentcall", "runs/runevent",
                "llm/llmendpoint"):
        assert admin_client.get(f"/admin/{url}/").status_code == 200, url


def test_healthz_answers(client):
    body = client.get(reverse("healthz")).json()
    assert body["status"] == "degraded" and body["checks"]["database"]["status"] == "ok"  # no live worker here


def test_ensure_admin_creates_one_superuser_once(settings, tmp_path, capsys):
    settings.VAR_DIR = tmp_path
    call_command("ensure_admin")
    first = capsys.readouterr().out
    assert "created superuser  username: admin  password: " in first
    assert (tmp_path / "admin-credentials.txt").read_text().startswith("username: admin")
    call_command("ensure_admin")
    assert "superuser exists" in capsys.readouterr().out
