"""The worker registry on the web side: liveness from heartbeats, the waiting status of runs whose queue
has no live worker, GPU targets at launch, the Workers page and /api/workers/. Real worker processes
are in test_fleet_workers.py and test_gpu_workers_command.py."""

from datetime import timedelta

import pytest
from celery import Task as CeleryTask
from django.utils import timezone
from rest_framework.test import APIClient

from apps.fleet.models import Worker
from apps.fleet.selectors import gpu_targets, run_wait_status, target_queue, worker_rows
from apps.fleet.services import (
    WorkerFacts,
    worker_beat,
    worker_register,
    worker_run_finished,
    worker_run_started,
    worker_stopped,
)
from apps.runs.models import Run, RunStatus
from apps.runs.services import RunConfig, run_claim, run_create, run_succeed

pytestmark = pytest.mark.django_db
H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(autouse=True)
def heartbeat(settings):
    settings.WORKER_HEARTBEAT_SECONDS = 10
    settings.WORKER_DEAD_AFTER_BEATS = 3  # dead after 30 s of silence
    settings.KERNELWEB_GPU_QUEUE = "gpu"


def register(name="gpu0@a", *, queues=("gpu.h100", "gpu"), gpu_name=H100, index=0, host="a") -> Worker:
    return worker_register(WorkerFacts(name=name, host=host, pid=4242, queues=queues, gpu_index=index,
                                       gpu_name=gpu_name, gpu_uuid=f"GPU-{name}", driver="550.54.15"))


def silent_for(worker: Worker, seconds: float) -> None:
    Worker.objects.filter(pk=worker.pk).update(last_seen=timezone.now() - timedelta(seconds=seconds))


def alive(name: str) -> bool:
    return next(row.alive for row in worker_rows(None) if row.worker.name == name)


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user(username="root", password="pw-root-123", is_staff=True)


def test_a_registered_worker_is_alive_until_it_misses_three_heartbeats(user):
    worker = register()
    assert alive("gpu0@a")
    silent_for(worker, 25)
    assert alive("gpu0@a")
    silent_for(worker, 35)
    assert not alive("gpu0@a")
    assert worker_beat("gpu0@a", ("gpu.h100", "gpu")) is True
    assert alive("gpu0@a")


def test_a_clean_shutdown_is_dead_at_once_and_a_restart_brings_it_back(user, make_run):
    run = make_run(user)
    register()
    worker_run_started("gpu0@a", run.pk)
    worker_stopped("gpu0@a")
    worker = Worker.objects.get(name="gpu0@a")
    assert worker.stopped_at is not None and worker.current_run is None and not alive("gpu0@a")
    register()
    assert alive("gpu0@a") and Worker.objects.count() == 1


def test_a_heartbeat_for_a_deleted_row_asks_the_worker_to_register_again():
    register()
    Worker.objects.all().delete()
    assert worker_beat("gpu0@a", ("gpu",)) is False


def test_the_current_run_is_set_and_cleared_by_its_own_run_only(user, make_run):
    first, second = make_run(user), make_run(user)
    register()
    worker_run_started("gpu0@a", first.pk)
    worker_run_started("gpu0@a", second.pk)  # concurrency 2: the later one is shown
    worker_run_finished("gpu0@a", first.pk)
    assert Worker.objects.get().current_run_id == second.pk
    worker_run_finished("gpu0@a", second.pk)
    assert Worker.objects.get().current_run_id is None


def test_a_heartbeat_forgets_a_current_run_that_ended_without_telling_the_worker(user, make_run):
    run = make_run(user)
    register()
    worker_run_started("gpu0@a", run.pk)  # its pool child is then killed: no task_postrun
    run_claim(run.pk, worker_host="b")
    run_succeed(run.pk)  # finished elsewhere after redelivery
    worker_beat("gpu0@a", ("gpu.h100", "gpu"))
    assert Worker.objects.get().current_run_id is None


# --- routing and the waiting status -----------------------------------------------------------------

def launch(owner, task, queue: str) -> Run:
    return run_create(owner=owner, task=task, config=RunConfig(model="m", queue=queue), dispatch=False)


def test_a_queued_run_whose_queue_never_had_a_worker_says_so(user, task):
    run = launch(user, task, "gpu.h100")
    assert run.queue == "gpu.h100"
    assert run_wait_status(run) == "waiting: no live worker for queue gpu.h100 (no worker has consumed it yet)"


def test_a_queued_run_whose_workers_died_names_the_last_one_seen(user, task):
    run = launch(user, task, "gpu.h100")
    silent_for(register("gpu0@a"), 3600)
    silent_for(register("gpu1@b", host="b"), 7200)
    assert run_wait_status(run) == "waiting: no live worker for queue gpu.h100 (last seen 1\xa0hour ago: gpu0@a)"


def test_no_waiting_status_while_a_live_worker_consumes_the_queue_or_once_the_run_started(user, task):
    run = launch(user, task, "gpu.h100")
    register()
    assert run_wait_status(run) == ""
    Worker.objects.all().delete()
    run_claim(run.pk, worker_host="a")
    run.refresh_from_db()
    assert run_wait_status(run) == ""  # running: someone took it


def test_untargeted_runs_go_to_the_default_queue_which_every_gpu_worker_consumes(user, task):
    run = launch(user, task, "")
    assert run.queue == "gpu"
    register("gpu0@a", queues=("gpu.a100", "gpu"), gpu_name="NVIDIA A100-SXM4-80GB")
    assert run_wait_status(run) == ""


def test_runs_and_manual_turns_are_sent_to_the_runs_queue(user, task, monkeypatch, django_capture_on_commit_callbacks):
    from apps.runs.manual import turn_submit_manual
    from apps.runs.tasks import evaluate_manual_turn, execute_run

    sent = []
    monkeypatch.setattr(CeleryTask, "apply_async", lambda self, args=None, kwargs=None, **options: sent.append(
        (self.name, args, options.get("queue"))))
    with django_capture_on_commit_callbacks(execute=True):
        run = run_create(owner=user, task=task, config=RunConfig(model="m", queue="gpu.h100"))
    with django_capture_on_commit_callbacks(execute=True):
        turn = turn_submit_manual(run=run, code="// mine")
    execute_run.apply_async((run.pk,), queue="elsewhere")  # an explicit queue wins
    Run.objects.filter(pk=run.pk).update(queue="")  # a run from before GPU targeting
    evaluate_manual_turn.delay(turn.pk)
    assert sent == [("runs.execute_run", (run.pk,), "gpu.h100"), ("runs.evaluate_manual_turn", (turn.pk,), "gpu.h100"),
                    ("runs.execute_run", (run.pk,), "elsewhere"), ("runs.evaluate_manual_turn", (turn.pk,), "gpu")]


@pytest.mark.parametrize(("value", "queue"), [
    ("", "gpu"), ("any", "gpu"), ("gpu", "gpu"), ("gpu.h100", "gpu.h100"), ("h100", "gpu.h100"), ("H100", "gpu.h100"),
    (H100, "gpu.h100"), ("GPU.A100", "gpu.a100"), ("!!!", ""), ("gpu.", ""),
])
def test_gpu_targets_accept_a_model_a_queue_or_a_gpu_name(value, queue):
    assert target_queue(value) == queue


def test_the_launch_choices_list_live_models_first_with_their_state():
    silent_for(register("gpu0@old", queues=("gpu.a100", "gpu"), gpu_name="NVIDIA A100-SXM4-80GB"), 600)
    register("gpu0@a")
    register("gpu1@a", index=1)
    assert [(t.value, t.label) for t in gpu_targets()] == [
        ("", "Any GPU · 2 live workers"),
        ("gpu.h100", f"H100 ({H100}) · 2 live workers"),
        ("gpu.a100", "A100 (NVIDIA A100-SXM4-80GB) · no live worker, last seen 10\xa0minutes ago"),
    ]


# --- pages ------------------------------------------------------------------------------------------

def test_the_launch_page_offers_the_gpu_models_and_warns_about_queues_without_live_worker(client, user, task):
    silent_for(register("gpu0@old", queues=("gpu.a100", "gpu"), gpu_name="NVIDIA A100-SXM4-80GB"), 600)
    client.force_login(user)
    html = client.get("/runs/launch/").content.decode()
    assert '<option value="gpu.a100">A100 (NVIDIA A100-SXM4-80GB) · no live worker' in html
    assert 'id="gpu-warnings"' in html
    assert "Any GPU: no live worker consumes gpu; runs sent there wait until one starts" in html
    assert "A100 (NVIDIA A100-SXM4-80GB): no live worker consumes gpu.a100" in html


def test_launching_for_a_gpu_model_records_its_queue_and_the_viewer_shows_the_wait(
        client, user, task, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: None)
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):  # sent: the outbox is empty
        response = client.post("/runs/launch/", {"tasks": [task.pk], "model": "m", "rounds": 1, "debug_rounds": 0,
                                                 "profile_mode": "none", "temperature": 0.2, "gpu": "gpu.h200"})
    run = Run.objects.get()
    assert response.status_code == 302 and run.queue == "gpu.h200"
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert "waiting: no live worker for queue gpu.h200 (no worker has consumed it yet)" in html
    assert "queue gpu.h200" in html
    assert "waiting: no live worker for queue gpu.h200" in client.get("/runs/").content.decode()
    register("gpu0@a", queues=("gpu.h200", "gpu"), gpu_name="NVIDIA H200")
    assert "waiting:" not in client.get(f"/runs/{run.pk}/").content.decode()
    assert "waiting:" not in client.get(f"/runs/{run.pk}/live/").content.decode()


def test_the_launch_form_rejects_a_target_that_is_no_gpu_model(client, user, task):
    client.force_login(user)
    response = client.post("/runs/launch/", {"tasks": [task.pk], "model": "m", "rounds": 1, "debug_rounds": 0,
                                             "profile_mode": "none", "temperature": 0.2, "gpu": "%%"})
    assert response.status_code == 200 and not Run.objects.exists()
    assert "Name a GPU model (h100), its queue (gpu.h100)" in response.content.decode()


def test_the_workers_page_shows_the_fleet_and_only_runs_the_viewer_may_see(client, user, other_user, staff, task):
    private = launch(other_user, task, "gpu")
    mine = launch(user, task, "gpu")
    register("gpu0@a")
    register("gpu1@a", index=1)
    silent_for(register("nogpu@c", queues=("gpu",), gpu_name="", index=None, host="c"), 120)
    worker_run_started("gpu0@a", private.pk)
    worker_run_started("gpu1@a", mine.pk)
    client.force_login(user)
    html = client.get("/workers/").content.decode()
    for text in ("<code>gpu0@a</code>", f"0: {H100}", "550.54.15", "<code>gpu.h100</code>", "no GPU",
                 f'href="/runs/{mine.pk}/"', "busy", 'class="badge alive"', 'class="badge dead"', "2\xa0minutes ago",
                 "<code>gpu.h100</code>: 2 live workers"):
        assert text in html, text
    assert f'href="/runs/{private.pk}/"' not in html
    assert html.index("gpu1@a") < html.index("nogpu@c")  # live ones first
    client.force_login(staff)
    assert f'href="/runs/{private.pk}/"' in client.get("/workers/").content.decode()


def test_the_workers_page_needs_a_signed_in_user(client):
    assert client.get("/workers/")["Location"].startswith("/accounts/login/")


# --- API --------------------------------------------------------------------------------------------

def test_the_workers_api_lists_state_gpu_and_visible_runs_only(user, other_user, staff, task):
    private = launch(other_user, task, "gpu")
    register("gpu0@a")
    worker_run_started("gpu0@a", private.pk)
    register("gpu1@a", index=1)
    worker_stopped("gpu1@a")
    api = APIClient()
    assert api.get("/api/workers/").status_code == 401
    api.force_authenticate(user)
    body = api.get("/api/workers/").json()
    assert body["count"] == 2
    first, second = body["results"]
    assert {k: first[k] for k in ("name", "host", "state", "alive", "gpu_index", "gpu_name", "gpu_model", "driver",
                                  "queues", "current_run", "busy")} == {
        "name": "gpu0@a", "host": "a", "state": "alive", "alive": True, "gpu_index": 0, "gpu_name": H100,
        "gpu_model": "h100", "driver": "550.54.15", "queues": ["gpu.h100", "gpu"], "current_run": None, "busy": True}
    assert (second["name"], second["state"], second["alive"]) == ("gpu1@a", "stopped", False)
    api.force_authenticate(staff)
    assert api.get("/api/workers/").json()["results"][0]["current_run"] == private.pk


def test_launching_through_the_api_takes_a_gpu_model(user, task, monkeypatch):
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", lambda run_id: None)
    api = APIClient()
    api.force_authenticate(user)
    response = api.post("/api/runs/", {"tasks": [task.pk], "model": "m", "gpu": "H100"}, format="json")
    assert response.status_code == 201 and response.json()["runs"][0]["queue"] == "gpu.h100"
    response = api.post("/api/runs/", {"tasks": [task.pk], "model": "m", "gpu": "???"}, format="json")
    assert response.status_code == 400 and "gpu" in response.json()
    response = api.post("/api/runs/", {"tasks": [task.pk], "model": "m"}, format="json")
    assert response.json()["runs"][0]["queue"] == "gpu"
    assert RunStatus.QUEUED == Run.objects.get(queue="gpu").status


def test_the_runs_api_says_why_a_queued_run_waits_with_one_query_for_the_whole_list(
        user, task, django_assert_max_num_queries):
    waiting = [launch(user, task, "gpu.h100") for _ in range(3)]
    served = launch(user, task, "gpu")
    register("gpu0@a", queues=("gpu",), gpu_name="NVIDIA L4")
    api = APIClient()
    api.force_authenticate(user)
    with django_assert_max_num_queries(4):  # count, page, workers; the user is forced
        body = api.get("/api/runs/").json()
    by_id = {run["id"]: run["waiting"] for run in body["results"]}
    assert {by_id[run.pk] for run in waiting} == {
        "waiting: no live worker for queue gpu.h100 (no worker has consumed it yet)"}
    assert by_id[served.pk] == ""
    assert api.get(f"/api/runs/{served.pk}/").json()["waiting"] == ""
