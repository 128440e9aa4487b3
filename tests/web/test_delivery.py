"""Delivery on the web side, on SQLite: the outbox fields, the 503 at launch when the broker refuses, the
reconciler's three cases, the worker's duplicate-message check and /healthz. The same faults on a real
stack (Redis, Celery, daphne) are in test_delivery_faults.py."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from kombu.exceptions import OperationalError
from rest_framework.test import APIClient

from apps.fleet.models import Worker
from apps.fleet.services import WorkerFacts, worker_register, worker_run_started
from apps.runs.models import Run, RunStatus
from apps.runs.reconcile import reconcile
from apps.runs.services import (
    DuplicateDelivery,
    RunConfig,
    run_claim,
    run_create,
    run_reclaim,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def delivery(settings):
    settings.WORKER_HEARTBEAT_SECONDS = 10
    settings.WORKER_DEAD_AFTER_BEATS = 3  # dead after 30 s
    settings.KERNELWEB_GPU_QUEUE = "gpu"
    settings.RUN_DISPATCH_GRACE_SECONDS = 30
    settings.RUN_REDISPATCH_AFTER_SECONDS = 300
    settings.RUN_MAX_DISPATCHES = 3


class Broker:
    """Stands in for enqueue_run: up (records the sends) or down (raises as kombu does)."""

    def __init__(self):
        self.up, self.sent = True, []

    def __call__(self, run_id):
        if not self.up:
            raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        self.sent.append(run_id)


@pytest.fixture
def broker(monkeypatch):
    broker = Broker()
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", broker)
    return broker


def launch(user, task, django_capture_on_commit_callbacks) -> Run:
    with django_capture_on_commit_callbacks(execute=True):
        run = run_create(owner=user, task=task, config=RunConfig(model="m"))
    run.refresh_from_db()
    return run


def age(run: Run, seconds: float, *fields: str) -> None:
    then = timezone.now() - timedelta(seconds=seconds)
    Run.objects.filter(pk=run.pk).update(**{f: then for f in fields})


def register(name="gpu0@a", host="a", queues=("gpu",)) -> Worker:
    return worker_register(WorkerFacts(name=name, host=host, pid=1, queues=queues, gpu_index=0, gpu_name="GPU"))


def silent_for(worker: Worker, seconds: float) -> None:
    Worker.objects.filter(pk=worker.pk).update(last_seen=timezone.now() - timedelta(seconds=seconds))


# --- the outbox ---------------------------------------------------------------------------------------

def test_a_sent_run_leaves_the_outbox(user, task, broker, django_capture_on_commit_callbacks):
    run = launch(user, task, django_capture_on_commit_callbacks)
    assert broker.sent == [run.pk]
    assert (run.dispatch_pending, run.dispatch_attempts, run.dispatched_at is not None) == (False, 1, True)


def test_a_refused_send_stays_in_the_outbox_and_the_reconciler_sends_it(user, task, broker,
                                                                        django_capture_on_commit_callbacks):
    broker.up = False
    run = launch(user, task, django_capture_on_commit_callbacks)
    assert (run.status, run.dispatch_pending, run.dispatch_attempts) == (RunStatus.QUEUED, True, 0)
    assert reconcile().sent == []  # within the grace period: a request may still be sending it
    age(run, 60, "created_at", "dispatched_at")
    assert reconcile().unsent == [run.pk]  # still down: stays pending
    age(run, 60, "dispatched_at")
    broker.up = True
    report = reconcile()
    run.refresh_from_db()
    assert report.sent == [run.pk] and broker.sent == [run.pk]
    assert (run.dispatch_pending, run.dispatch_attempts) == (False, 1)
    assert reconcile().sent == []  # sent once


def test_runs_not_meant_for_dispatch_are_not_sent(user, task, broker, make_run):
    run = make_run(user)  # dispatch=False: manual runs, imports, tests
    age(run, 3600, "created_at")
    assert reconcile().sent == [] and broker.sent == []


# --- launch answers 503 when the broker refuses ---------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_api_launch_with_the_broker_down_answers_503_and_keeps_the_run(user, task, broker):
    broker.up = False
    api = APIClient()
    api.force_authenticate(user)
    response = api.post("/api/runs/", {"tasks": [task.pk], "model": "m"}, format="json")
    assert response.status_code == 503, response.content
    body = response.json()
    assert "job queue is unreachable" in body["detail"] and "saved" in body["detail"]
    run = Run.objects.get()
    assert body["runs"][0]["id"] == run.pk and (run.status, run.dispatch_pending) == (RunStatus.QUEUED, True)
    broker.up = True
    assert api.post("/api/runs/", {"tasks": [task.pk], "model": "m"}, format="json").status_code == 201


@pytest.mark.django_db(transaction=True)
def test_form_launch_with_the_broker_down_answers_503_with_the_message(client, user, task, broker):
    broker.up = False
    client.force_login(user)
    response = client.post(reverse("runs:launch"), {"tasks": [task.pk], "model": "m", "rounds": 1, "debug_rounds": 0,
                                                    "profile_mode": "none", "temperature": 0.2})
    html = response.content.decode()
    run = Run.objects.get()
    assert response.status_code == 503 and "job queue is unreachable" in html
    assert reverse("runs:detail", args=[run.pk]) in html and run.dispatch_pending


# --- stuck queued runs ----------------------------------------------------------------------------------

def sent_long_ago(user, task, broker, capture, seconds=400) -> Run:
    run = launch(user, task, capture)
    age(run, seconds, "created_at", "dispatched_at")
    return run


def test_a_queued_run_whose_message_is_lost_is_sent_again_when_a_worker_idles(
        user, task, broker, django_capture_on_commit_callbacks):
    run = sent_long_ago(user, task, broker, django_capture_on_commit_callbacks)
    assert reconcile().resent == []  # no live worker on its queue: waiting, not lost
    register(queues=("gpu.h100",))
    assert reconcile().resent == []  # a live worker, but of another queue
    busy = register("gpu1@a", queues=("gpu",))
    other = run_create(owner=user, task=task, config=RunConfig(model="m"), dispatch=False)
    worker_run_started(busy.name, other.pk)
    assert reconcile().resent == []  # its queue's worker is busy: the run is just waiting its turn
    register("gpu2@a", queues=("gpu",))
    assert reconcile().resent == [run.pk]
    run.refresh_from_db()
    assert (run.dispatch_attempts, run.status) == (2, RunStatus.QUEUED) and broker.sent == [run.pk, run.pk]
    assert reconcile().resent == []  # the new message is young


def test_a_run_no_worker_takes_after_the_last_message_fails_with_the_reason(
        user, task, broker, django_capture_on_commit_callbacks):
    register(queues=("gpu",))
    run = sent_long_ago(user, task, broker, django_capture_on_commit_callbacks)
    for attempts in (2, 3):
        assert reconcile().resent == [run.pk]
        age(run, 400, "dispatched_at")
        assert Run.objects.get(pk=run.pk).dispatch_attempts == attempts
    report = reconcile()
    run.refresh_from_db()
    assert report.failed_stuck == [run.pk] and run.status == RunStatus.FAILED
    assert "no worker took this run" in run.error and "3 times" in run.error and "Launch the run again" in run.error
    assert [e.type for e in run.events.order_by("seq")][-1] == "run.failed"


# --- lost workers ---------------------------------------------------------------------------------------

def running_on(worker: Worker, run: Run, seconds_ago: float = 120) -> None:
    assert run_claim(run.pk, worker_host=worker.host, gpu_name="GPU", message="m1")
    worker_run_started(worker.name, run.pk)
    age(run, seconds_ago, "started_at")


def test_a_running_run_whose_worker_stopped_beating_fails_as_worker_lost(user, task, make_run):
    worker = register()
    run = make_run(user)
    running_on(worker, run)
    assert reconcile().failed_lost == []  # alive
    silent_for(worker, 35)
    report = reconcile()
    run.refresh_from_db()
    assert report.failed_lost == [run.pk] and run.status == RunStatus.FAILED
    assert run.error.startswith("worker lost: gpu0@a on a stopped sending heartbeats at ")
    assert reconcile().failed_lost == []  # once


def test_a_dead_worker_of_a_multi_gpu_host_is_lost_though_its_neighbour_lives(user, task, make_run):
    dead, _ = register("gpu0@a"), register("gpu1@a")
    run = make_run(user)
    running_on(dead, run)
    silent_for(dead, 35)
    assert reconcile().failed_lost == [run.pk]


def test_a_run_nobody_claims_to_hold_is_judged_by_its_host(user, task, make_run):
    worker = register()
    run = make_run(user)
    running_on(worker, run)
    Worker.objects.update(current_run=None)  # the informational record was missed
    assert reconcile().failed_lost == []  # a worker up since before the run lives on its host
    silent_for(worker, 35)
    assert reconcile().failed_lost == [run.pk]


def test_a_running_run_without_any_worker_record_is_left_alone(user, task, make_run):
    run = make_run(user)
    assert run_claim(run.pk, worker_host="elsewhere", message="m1")
    age(run, 3600, "started_at")
    assert reconcile().failed_lost == []


# --- the worker's claim is idempotent ------------------------------------------------------------------

def test_a_second_message_for_a_running_run_is_a_duplicate_and_changes_nothing(user, task, make_run):
    run = make_run(user)
    assert run_claim(run.pk, worker_host="a", message="m1")
    assert not run_claim(run.pk, worker_host="b", message="m2")
    with pytest.raises(DuplicateDelivery):
        run_reclaim(run.pk, worker_host="b", message="m2")
    run.refresh_from_db()
    assert (run.status, run.worker_host, run.attempts) == (RunStatus.RUNNING, "a", 1)
    assert run_reclaim(run.pk, worker_host="b", message="m1")  # a redelivery of its own message: worker lost
    run.refresh_from_db()
    assert (run.worker_host, run.attempts) == ("b", 2)


def test_the_command_reports_what_it_did(user, task, broker, django_capture_on_commit_callbacks, capsys):
    broker.up = False
    run = launch(user, task, django_capture_on_commit_callbacks)
    age(run, 60, "created_at", "dispatched_at")
    broker.up = True
    call_command("reconcile_runs")
    assert "reconcile: sent 1," in capsys.readouterr().out


# --- /healthz -------------------------------------------------------------------------------------------

def test_healthz_reports_each_dependency_and_is_degraded_without_workers(client):
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200 and body["status"] == "degraded"
    checks = body["checks"]
    assert {k: v["status"] for k, v in checks.items()} == {
        "database": "ok", "broker": "ok", "channel_layer": "ok", "workers": "degraded"}
    assert checks["workers"]["count"] == 0
    register()
    body = client.get("/healthz").json()
    assert body["status"] == "ok" and body["checks"]["workers"]["count"] == 1


def test_healthz_answers_503_quickly_when_the_broker_is_unreachable(client, settings):
    import time

    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    started = time.monotonic()
    response = client.get("/healthz")
    assert time.monotonic() - started < 3
    body = response.json()
    assert response.status_code == 503 and body["status"] == "down"
    assert body["checks"]["broker"]["status"] == "down" and "Connection" in body["checks"]["broker"]["error"]
    assert body["checks"]["database"]["status"] == "ok"


def test_healthz_answers_503_when_the_database_is_down(client, monkeypatch):
    def down():
        raise OSError("connection refused")

    monkeypatch.setattr("apps.accounts.health.check_database", down)
    body = client.get("/healthz")
    assert body.status_code == 503 and body.json()["checks"]["workers"]["status"] == "unknown"


def test_a_refused_send_is_sent_with_no_grace_period_as_stored_by_the_database_clock(
        user, task, broker, settings, django_capture_on_commit_callbacks):
    """dispatched_at as the failed send wrote it (the database's Now(): on SQLite a string of another
    precision than Python's) must still match the reconciler's conditions."""
    import time

    settings.RUN_DISPATCH_GRACE_SECONDS = 0
    broker.up = False
    run = launch(user, task, django_capture_on_commit_callbacks)
    broker.up = True
    time.sleep(0.01)
    assert reconcile().sent == [run.pk]


def test_an_unsent_run_says_so_on_its_page_and_in_the_list(client, user, task, broker,
                                                           django_capture_on_commit_callbacks):
    broker.up = False
    run = launch(user, task, django_capture_on_commit_callbacks)
    client.force_login(user)
    for url in (reverse("runs:detail", args=[run.pk]), reverse("runs:list")):
        assert "not yet sent, the job queue was unreachable" in client.get(url).content.decode(), url


@pytest.mark.django_db(transaction=True)
def test_experiment_launch_with_the_broker_down_answers_503_and_keeps_its_runs(client, user, task, broker):
    broker.up = False
    api = APIClient()
    api.force_authenticate(user)
    response = api.post("/api/experiments/", {"name": "sweep", "tasks": [task.pk], "model": "m"}, format="json")
    assert response.status_code == 503, response.content
    assert "job queue is unreachable" in response.json()["detail"]
    assert list(Run.objects.values_list("status", "dispatch_pending")) == [(RunStatus.QUEUED, True)]
    client.force_login(user)
    response = client.post(reverse("experiments:launch"), {"name": "again", "tasks": [task.pk], "model": "m",
                                                           "rounds": 1, "debug_rounds": 0, "seeds": 1,
                                                           "profile_mode": "none", "temperature": 0.2})
    assert response.status_code == 503 and "job queue is unreachable" in response.content.decode()
    assert Run.objects.filter(dispatch_pending=True).count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_manual_turn_refused_by_the_broker_answers_503_and_the_reconciler_sends_it(client, user, task, settings,
                                                                                       monkeypatch):
    settings.RUN_DISPATCH_GRACE_SECONDS = 0
    sent, up = [], [False]

    def enqueue(turn_id):
        if not up[0]:
            raise OperationalError("Connection refused")
        sent.append(turn_id)

    monkeypatch.setattr("apps.runs.dispatch.enqueue_manual_turn", enqueue)
    client.force_login(user)
    response = client.post(reverse("runs:task_evaluate", args=[task.pk]), {"code": "__global__ void k() {}"})
    assert response.status_code == 503 and "job queue is unreachable" in response.content.decode()
    run = Run.objects.get()
    turn = run.turns.get()
    assert turn.dispatch_pending and run.origin == "manual" and not run.dispatch_pending
    up[0] = True
    report = reconcile()
    assert report.turns_sent == [turn.pk] and sent == [turn.pk] and report.sent == []
    assert reconcile().turns_sent == []
