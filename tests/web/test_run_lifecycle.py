import threading

import pytest
from django.db import close_old_connections

from apps.runs.models import Run, RunEvent, RunStatus
from apps.runs.services import TransitionError, run_cancel, run_claim, run_fail, run_succeed, run_transition


@pytest.mark.django_db
def test_new_run_is_queued_and_logs_a_queued_event(make_run, user):
    run = make_run(user)
    assert run.status == RunStatus.QUEUED
    assert list(RunEvent.objects.filter(run=run).values_list("seq", "type")) == [(1, "run.queued")]


@pytest.mark.django_db
def test_claim_moves_queued_to_running_once(make_run, user):
    run = make_run(user)
    assert run_claim(run.pk, worker_host="gpu-01", gpu_name="H100") is True
    assert run_claim(run.pk, worker_host="gpu-02", gpu_name="H100") is False
    run.refresh_from_db()
    assert (run.status, run.worker_host, run.started_at is not None) == (RunStatus.RUNNING, "gpu-01", True)


@pytest.mark.django_db
def test_terminal_states_are_final(make_run, user):
    run = make_run(user)
    run_claim(run.pk, worker_host="w")
    assert run_succeed(run.pk) is True
    assert run_fail(run.pk, "late failure") is False
    assert run_cancel(run) is False
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and run.error == "" and run.finished_at is not None


@pytest.mark.django_db
def test_a_queued_run_cannot_succeed_without_running(make_run, user):
    run = make_run(user)
    assert run_succeed(run.pk) is False
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


@pytest.mark.django_db
def test_cancel_of_queued_run_records_reason_and_event(make_run, user):
    run = make_run(user)
    assert run_cancel(run) is True
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.error == "cancelled by user"
    assert run.events.last().type == "run.cancelled"


@pytest.mark.django_db
def test_a_cancelled_run_is_not_claimed_by_a_late_worker(make_run, user):
    run = make_run(user)
    run_cancel(run)
    assert run_claim(run.pk, worker_host="w") is False


@pytest.mark.django_db
def test_unknown_status_is_rejected(make_run, user):
    run = make_run(user)
    with pytest.raises(TransitionError):
        run_transition(run.pk, "paused")


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_claims_one_wins(make_run, user):
    run = make_run(user)
    barrier = threading.Barrier(2)
    results = []

    def claim(host):
        try:
            barrier.wait()
            results.append(run_claim(run.pk, worker_host=host))
        finally:
            close_old_connections()

    threads = [threading.Thread(target=claim, args=(f"w{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, True]
    assert RunEvent.objects.filter(run=run, type="run.running").count() == 1


@pytest.mark.django_db
def test_a_run_whose_worker_died_is_restarted_once_then_failed(make_run, user):
    from apps.runs.services import run_reclaim

    run = make_run(user)
    run_claim(run.pk, worker_host="gpu-01")  # that worker then dies; the broker redelivers
    assert run_reclaim(run.pk, worker_host="gpu-02") is True
    run.refresh_from_db()
    assert (run.status, run.attempts, run.worker_host) == (RunStatus.RUNNING, 2, "gpu-02")
    assert run.events.last().payload == {"lost_worker": "gpu-01", "worker": "gpu-02"}
    assert run_reclaim(run.pk, worker_host="gpu-03") is False  # lost a second time
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "lost 2 times (last on gpu-02)" in run.error


@pytest.mark.django_db
def test_a_redelivered_message_restarts_the_orphaned_run(make_run, user):
    from apps.runs.execution import run_execute
    from worker.engine import toolchain
    if toolchain.detect().gpu is not None:
        pytest.skip("asserts the no-GPU ending; on a GPU host the restarted run goes on to the pipeline")
    run = make_run(user)
    run_claim(run.pk, worker_host="lost-host")
    run_execute(run.pk)  # the Celery task body, as a second worker receives the redelivered message
    run.refresh_from_db()
    types = list(run.events.values_list("type", flat=True))
    assert "run.requeued" in types and run.attempts == 2
    assert run.status == RunStatus.FAILED  # this machine has no GPU: the restarted run says so
    assert "No NVIDIA GPU" in run.error


@pytest.mark.django_db
def test_a_message_for_a_finished_run_does_nothing(make_run, user):
    from apps.runs.execution import run_execute

    run = make_run(user)
    run_cancel(run)
    before = run.events.count()
    run_execute(run.pk)
    assert run.events.count() == before
