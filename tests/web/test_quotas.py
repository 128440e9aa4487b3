"""Per-user quotas (apps/runs/quotas.py) and the workers' fair share (apps/runs/fairness.py).

One user must not be able to queue thousands of runs and starve everyone else: a launch that would go over
the owner's limit is refused whole (nothing created) with a message naming the limit and what is in
flight, as a form error on the pages and HTTP 429 in the API; staff are exempt; admins raise or lower the
limit per user or per group (Quota rows, the most generous applicable wins)."""

import threading

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts.models import Quota
from apps.experiments.models import Experiment
from apps.runs.models import Run, RunStatus, Turn, TurnKind
from apps.runs.quotas import QuotaExceeded, limits_for
from apps.runs.services import RunConfig, run_cancel, run_succeed, runs_launch
from tests.web.test_experiments_pages import three_tasks

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_worker")]
CODE = "__global__ void vadd(const float* A, const float* B, float* C, int N) {}\n"


@pytest.fixture(autouse=True)
def _fresh_throttles():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def limits(settings):
    settings.QUOTA_ACTIVE_RUNS = 3
    settings.QUOTA_ACTIVE_EXPERIMENTS = 1
    settings.QUOTA_PENDING_MANUAL_TURNS = 2
    return settings


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def api_launch(user, tasks):
    return api(user).post("/api/runs/", {"tasks": [t.pk for t in tasks], "model": "m"}, format="json")


def launch_form(client, tasks):
    return client.post(reverse("runs:launch"), {
        "tasks": [t.pk for t in tasks], "model": "m", "rounds": 1, "debug_rounds": 0, "profile_mode": "none",
        "temperature": 0.2})


def mine(user) -> int:
    return Run.objects.filter(owner=user).count()


# ---- runs ---------------------------------------------------------------------------------------------------


def test_the_api_refuses_a_run_over_the_limit_with_429_naming_the_limit_and_what_is_in_flight(user, task, limits):
    for _ in range(3):
        assert api_launch(user, [task]).status_code == 201
    response = api_launch(user, [task])
    assert response.status_code == 429
    body = response.json()
    assert body["detail"] == ("You have 3 runs queued or running, the limit is 3; wait for some to finish or ask "
                              "an admin to raise it.")
    assert (body["limit"], body["in_flight"], body["quota"]) == (3, 3, "active_runs")
    assert mine(user) == 3


def test_a_launch_of_several_tasks_that_does_not_fit_creates_none_of_them(user, task, limits):
    tasks = three_tasks(task)
    assert api_launch(user, tasks[:1]).status_code == 201
    response = api_launch(user, tasks)
    assert response.status_code == 429
    assert "You have 1 run queued or running and asked for 3 more, the limit is 3" in response.json()["detail"]
    assert mine(user) == 1
    assert api_launch(user, tasks[:2]).status_code == 201 and mine(user) == 3  # exactly up to the limit


def test_the_launch_form_shows_the_quota_as_a_form_error_and_creates_nothing(client, user, task, limits):
    client.force_login(user)
    tasks = three_tasks(task)
    assert launch_form(client, tasks).status_code == 302 and mine(user) == 3
    response = launch_form(client, [task])
    html = response.content.decode()
    assert response.status_code == 200
    assert "Not launched: you have 3 runs queued or running, the limit is 3; wait for some to finish" in html
    assert mine(user) == 3
    assert "Your quota: 3 of 3 runs queued or running, 0 of 1 experiments in flight, 0 of 2 manual turns" in html
    assert "Your quota: 3 of 3 runs" in client.get(reverse("experiments:launch")).content.decode()


def test_finished_and_cancelled_runs_free_their_place(user, task, limits):
    runs = api_launch(user, three_tasks(task)).json()["runs"]
    assert api_launch(user, [task]).status_code == 429
    Run.objects.filter(pk=runs[0]["id"]).update(status=RunStatus.RUNNING)
    run_succeed(runs[0]["id"])
    run_cancel(Run.objects.get(pk=runs[1]["id"]))
    assert api_launch(user, [task]).status_code == 201
    assert api_launch(user, [task]).status_code == 201
    assert api_launch(user, [task]).status_code == 429


def test_the_limit_is_per_user_another_user_still_launches(user, other_user, task, limits):
    api_launch(user, three_tasks(task))
    assert api_launch(user, [task]).status_code == 429
    assert api_launch(other_user, [task]).status_code == 201


def test_staff_users_are_exempt(user, task, limits):
    user.is_staff = True
    user.save()
    assert api_launch(user, three_tasks(task)).status_code == 201
    assert api_launch(user, [task]).status_code == 201
    assert api_launch(user, [task]).status_code == 201
    assert mine(user) == 5


def test_an_admin_raises_or_lowers_one_users_limit_with_a_quota_row(user, other_user, task, limits):
    Quota.objects.create(user=user, active_runs=5)
    Quota.objects.create(user=other_user, active_runs=1)
    tasks = three_tasks(task)
    assert api_launch(user, tasks).status_code == 201
    assert api_launch(user, tasks[:2]).status_code == 201
    response = api_launch(user, [task])
    assert response.status_code == 429 and response.json()["limit"] == 5
    assert api_launch(other_user, [task]).status_code == 201
    assert api_launch(other_user, [task]).json()["limit"] == 1
    assert limits_for(user).active_experiments == 1  # a limit the row leaves empty keeps the default


def test_a_group_quota_applies_to_its_members_and_the_most_generous_row_wins(user, limits):
    small, large = Group.objects.create(name="students"), Group.objects.create(name="lab")
    Quota.objects.create(group=small, active_runs=4, pending_manual_turns=9)
    Quota.objects.create(group=large, active_runs=50)
    assert limits_for(user).active_runs == 3  # in no group, no row of their own: the default
    user.groups.add(small)
    assert limits_for(user).active_runs == 4
    Quota.objects.create(user=user, active_runs=10)
    assert (limits_for(user).active_runs, limits_for(user).pending_manual_turns) == (10, 9)
    user.groups.add(large)
    assert limits_for(user).active_runs == 50


def test_a_quota_row_is_for_a_user_or_a_group_not_both(user):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        Quota.objects.create(user=user, group=Group.objects.create(name="g"), active_runs=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Quota.objects.create(active_runs=1)


# ---- experiments --------------------------------------------------------------------------------------------


def experiment_body(**extra):
    return {"name": "sweep", "suite": "testsuite", "seeds": 1, "model": "m", "debug_rounds": 0, **extra}


def test_an_experiment_counts_every_run_it_would_launch(user, task, limits):
    three_tasks(task)
    response = api(user).post("/api/experiments/", experiment_body(seeds=2), format="json")  # 3 tasks x 2 seeds
    assert response.status_code == 429
    assert response.json()["detail"].startswith("You have 0 runs queued or running and asked for 6 more, the "
                                                "limit is 3")
    assert not Experiment.objects.exists() and not Run.objects.exists()
    assert api(user).post("/api/experiments/", experiment_body(), format="json").status_code == 201
    assert mine(user) == 3


def test_the_experiment_form_shows_the_quota_and_creates_nothing(client, user, task, limits):
    three_tasks(task)
    client.force_login(user)
    response = client.post(reverse("experiments:launch"), {
        **experiment_body(seeds=2), "rounds": 1, "profile_mode": "none", "temperature": 0.2})
    html = response.content.decode()
    assert response.status_code == 200 and "Not launched: you have 0 runs queued or running and asked for 6" in html
    assert not Experiment.objects.exists() and not Run.objects.exists()


def test_active_experiments_are_limited(user, task, limits):
    limits.QUOTA_ACTIVE_RUNS = 100
    assert api(user).post("/api/experiments/", experiment_body(), format="json").status_code == 201
    response = api(user).post("/api/experiments/", experiment_body(name="second"), format="json")
    assert response.status_code == 429
    body = response.json()
    assert (body["quota"], body["limit"], body["in_flight"]) == ("active_experiments", 1, 1)
    assert "you have 1 experiment with runs queued or running, the limit is 1" in body["detail"].lower()
    for run in Run.objects.filter(owner=user):
        run_cancel(run)
    assert api(user).post("/api/experiments/", experiment_body(name="third"), format="json").status_code == 201


def test_re_running_an_experiments_failed_runs_counts_them(user, task, limits):
    three_tasks(task)
    pk = api(user).post("/api/experiments/", experiment_body(), format="json").json()["id"]
    for run in Run.objects.filter(owner=user):
        run_cancel(run)
    api_launch(user, [task])  # one place left of 3
    response = api(user).post(f"/api/experiments/{pk}/rerun-failed/")
    assert response.status_code == 429 and "asked for 3 more" in response.json()["detail"]
    assert mine(user) == 4


# ---- manual turns -------------------------------------------------------------------------------------------


def test_pending_manual_turns_are_limited_on_the_pages(client, user, task, limits):
    client.force_login(user)
    url = reverse("runs:task_evaluate", args=[task.pk])
    for _ in range(2):
        assert client.post(url, {"code": CODE}).status_code == 302
    response = client.post(url, {"code": CODE})
    html = response.content.decode()
    assert response.status_code == 200
    assert "Not submitted: you have 2 manual turns waiting for evaluation, the limit is 2" in html
    assert Turn.objects.filter(kind=TurnKind.MANUAL).count() == 2 and mine(user) == 2

    run = Run.objects.filter(owner=user).first()
    response = client.post(reverse("runs:manual", args=[run.pk]), {"code": CODE}, follow=True)
    assert "you have 2 manual turns waiting for evaluation, the limit is 2" in response.content.decode()
    assert Turn.objects.filter(kind=TurnKind.MANUAL).count() == 2

    Turn.objects.filter(pk=Turn.objects.filter(kind=TurnKind.MANUAL).first().pk).update(verdict="ok")
    assert client.post(url, {"code": CODE}).status_code == 302  # an evaluated turn frees its place


def test_manual_runs_do_not_count_against_the_run_limit(client, user, task, limits):
    client.force_login(user)
    client.post(reverse("runs:task_evaluate", args=[task.pk]), {"code": CODE})
    assert api_launch(user, three_tasks(task)).status_code == 201


# ---- concurrency --------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_launches_of_one_user_never_overshoot_the_limit(user, task, limits):
    """Eight threads, each with its own database connection, launch at once; the owner's row lock (PostgreSQL)
    or the IMMEDIATE write lock (SQLite) makes them count one after the other."""
    threads, start, outcomes = 8, threading.Barrier(8), []

    def launch():
        try:
            start.wait()
            runs_launch(owner=user, tasks=[task], config=RunConfig(model="m"))
            outcomes.append("ok")
        except QuotaExceeded:
            outcomes.append("refused")
        except Exception as exc:  # noqa: BLE001 - reported below
            outcomes.append(repr(exc))
        finally:
            connection.close()

    workers = [threading.Thread(target=launch) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(outcomes) == ["ok"] * 3 + ["refused"] * 5, outcomes
    assert mine(user) == 3


# ---- fair share ---------------------------------------------------------------------------------------------


def _queued(owner, task, queue="gpu"):
    return Run.objects.create(owner=owner, task=task, model="m", queue=queue)


def _running(owner, task, n, queue="gpu"):
    return [Run.objects.create(owner=owner, task=task, model="m", queue=queue, status=RunStatus.RUNNING)
            for _ in range(n)]


def test_a_user_at_their_share_waits_while_another_users_run_waits(settings, user, other_user, task):
    from apps.runs.fairness import fair_share_should_wait

    settings.FAIR_SHARE_RUNNING_PER_USER = 2
    _running(user, task, 2)
    hog = _queued(user, task)
    assert not fair_share_should_wait(hog.pk)  # nobody else waits: a lone user may use every GPU
    waiting = _queued(other_user, task)
    assert fair_share_should_wait(hog.pk)
    assert not fair_share_should_wait(waiting.pk)
    _running(other_user, task, 2)  # the other user is at their share too: nobody is preferred
    assert not fair_share_should_wait(hog.pk)
    settings.FAIR_SHARE_RUNNING_PER_USER = 0
    assert not fair_share_should_wait(hog.pk)


def test_runs_waiting_on_another_queue_do_not_hold_a_users_run_back(settings, user, other_user, task):
    from apps.runs.fairness import fair_share_should_wait

    settings.FAIR_SHARE_RUNNING_PER_USER = 1
    _running(user, task, 1)
    hog = _queued(user, task)
    _queued(other_user, task, queue="gpu.h100")
    assert not fair_share_should_wait(hog.pk)


def test_the_worker_sends_a_deferred_run_again_with_a_countdown_and_does_not_claim_it(
        settings, monkeypatch, user, other_user, task):
    from apps.runs import execution, fairness

    settings.FAIR_SHARE_RUNNING_PER_USER = 1
    settings.FAIR_SHARE_DEFER_SECONDS = 7
    settings.CELERY_TASK_ALWAYS_EAGER = False
    _running(user, task, 1)
    hog = _queued(user, task, queue="gpu.h100")
    _queued(other_user, task, queue="gpu.h100")
    sent = []

    class Signature:
        def __init__(self, name, args, options):
            sent.append((name, args, options))

        def apply_async(self):
            pass

    monkeypatch.setattr(fairness.current_app, "signature", Signature)
    monkeypatch.setattr(execution, "job_start", lambda *a, **k: pytest.fail("a deferred run must not be claimed"))
    execution.run_execute(hog.pk)
    assert sent == [("runs.execute_run", (hog.pk,), {"queue": "gpu.h100", "countdown": 7})]
    hog.refresh_from_db()
    assert hog.status == RunStatus.QUEUED and hog.attempts == 0


def test_admins_edit_quotas_per_user_or_group_in_the_admin(admin_client, user):
    assert admin_client.get("/admin/accounts/quota/").status_code == 200
    response = admin_client.post("/admin/accounts/quota/add/", {"user": user.pk, "active_runs": 40,
                                                                "note": "thesis deadline"})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert limits_for(user).active_runs == 40
    response = admin_client.post("/admin/accounts/quota/add/", {"active_runs": 40})
    assert response.status_code == 200 and Quota.objects.count() == 1  # neither a user nor a group: refused
