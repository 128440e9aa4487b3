"""No run lost between the database and the queue, or with its worker: faults on a real stack.

A private redis-server WITHOUT persistence (no append-only file, no snapshots: a restart empties it) is
the Celery broker and the Channels layer of daphne and one Celery prefork worker (simulated GPU,
tests/support/simulated_gpu.py; scripted LLM) that also runs Celery beat (-B), and so the delivery
reconciler (apps/runs/reconcile.py) every second. Thresholds are shortened through the environment
(heartbeat 0.5 s, dead after 2 beats, re-send after 2 s). Each scenario ends with every run in a
visible, correct state, and each run's event seq numbers contiguous and unique. The timings measured
here are printed (pytest -s) and recorded in docs/benchmarks.md.
"""

import json
import os
import shutil
import signal
import time
import urllib.error
import urllib.request
from datetime import datetime

import pytest

from testing.scripted_llm import ScriptedLLM
from tests.support.scripted_eval import COMMAND, PLAN, kernel
from tests.support.specs import write_task
from tests.support.stack import ADMIN, ADMIN_PASSWORD, PrivateRedis, make_stack

pytestmark = [pytest.mark.slow, pytest.mark.redis]
ROUNDS = 1
TERMINAL = {"run.succeeded", "run.failed", "run.cancelled"}
REDISPATCH_AFTER_S = 2
SCRIPT = [
    {"agent": "planner", "content": PLAN, "delay_s": 0.3, "repeat": 1000},
    {"agent": "coder", "content": kernel("ok 1.5"), "delay_s": 0.3, "repeat": 1000},
    {"agent": "compiler", "content": COMMAND, "delay_s": 0.3, "repeat": 1000},
]
MEASURED: dict[str, float] = {}


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = PrivateRedis(tmp_path_factory.mktemp("redis-volatile"), durable=False)
    server.start()
    yield server
    server.stop()


class FaultStack:
    def __init__(self, stack, llm):
        self.stack, self.llm, self.worker = stack, llm, None

    def start_worker(self):
        self.stack.start_worker("-B", "--include", "tests.support.simulated_gpu", pool="prefork")
        self.worker = self.stack.processes[-1][0]
        deadline = time.monotonic() + 60
        while not self.stack.query("SELECT 1 FROM fleet_worker WHERE pid=? AND stopped_at IS NULL", self.worker.pid):
            assert time.monotonic() < deadline, "the worker did not register:\n" + self.stack.log("worker")[-3000:]
            time.sleep(0.2)

    def kill_worker(self):
        """SIGKILL the whole worker (main process, pool child, beat): its heartbeats stop."""
        os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait(timeout=10)


@pytest.fixture(scope="module")
def faults(tmp_path_factory, redis_server):
    with ScriptedLLM(SCRIPT) as llm:
        base = tmp_path_factory.mktemp("stack-delivery")
        write_task(base / "tasks", "vadd")
        stack = make_stack(base, base / "tasks", REDIS_URL=redis_server.url, CHANNELS_PREFIX="kw-delivery",
                           EVENT_POLL_SECONDS="1", WORKER_HEARTBEAT_SECONDS="0.5", WORKER_DEAD_AFTER_BEATS="2",
                           RECONCILE_INTERVAL_SECONDS="1", RUN_DISPATCH_GRACE_SECONDS="0",
                           RUN_REDISPATCH_AFTER_SECONDS=str(REDISPATCH_AFTER_S), RUN_MAX_DISPATCHES="5",
                           CELERY_VISIBILITY_TIMEOUT="3600")
        stack.manage("shell", "-c", "from apps.llm.models import LLMEndpoint; "
                     f"LLMEndpoint.objects.create(name='scripted', base_url='{llm.base_url}')")
        stack.start(worker=False)
        faults = FaultStack(stack, llm)
        faults.start_worker()
        yield faults
        stack.stop()
        if MEASURED:
            print("\nmeasured:", json.dumps(MEASURED))


def _launch(stack, *, dispatch=True, rounds=ROUNDS, count=1):
    ids = stack.create_runs(rounds, count=count, dispatch=dispatch)
    return ids[0] if count == 1 else ids


def _api(stack, path, body=None, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    request = urllib.request.Request(stack.url + path, data=json.dumps(body).encode() if body is not None else None,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _events(stack, run_id):
    return stack.query("SELECT seq, type FROM runs_runevent WHERE run_id=? ORDER BY seq", run_id)


def _status(stack, run_id):
    return stack.query("SELECT status, error, dispatch_pending, dispatch_attempts FROM runs_run WHERE id=?",
                       run_id)[0]


def _db_time(stack, column, run_id) -> datetime:
    value = stack.query(f"SELECT {column} FROM runs_run WHERE id=?", run_id)[0][0]
    return datetime.fromisoformat(value).replace(tzinfo=None)


def _wait(stack, run_id, predicate, what, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = _events(stack, run_id)
        if predicate(events):
            return events
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what} of run {run_id}; events: {_events(stack, run_id)}; "
                f"run: {_status(stack, run_id)}\n" + stack.log("worker")[-4000:])


def _ended(events):
    return bool(events) and events[-1][1] in TERMINAL


def _started(events):
    return "run.running" in [t for _, t in events]


def _assert_clean(stack, run_id, *, end="run.succeeded", rounds=ROUNDS):
    """Ends as expected; seq numbers 1..n, each once; one start; each turn stored once."""
    events = _events(stack, run_id)
    seqs, types = [s for s, _ in events], [t for _, t in events]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    assert types[0] == "run.queued" and types[-1] == end, types
    assert sum(t in TERMINAL for t in types) == 1, types
    if end == "run.succeeded":
        assert types.count("run.running") == 1, types
        turns = stack.query("SELECT round_index FROM runs_turn WHERE run_id=? ORDER BY 1", run_id)
        assert turns == [(r,) for r in range(rounds + 1)]
        assert stack.query("SELECT status FROM runs_run WHERE id=?", run_id)[0][0] == "succeeded"


def test_launch_with_the_broker_down_answers_503_and_the_run_starts_when_it_is_back(faults, redis_server):
    stack = faults.stack
    token = _api(stack, "/api/auth/token/", {"username": ADMIN, "password": ADMIN_PASSWORD})[1]["token"]
    task_id = stack.query("SELECT id FROM catalog_task WHERE operator='vadd' AND precision='fp32'")[0][0]
    endpoint = stack.query("SELECT id FROM llm_llmendpoint")[0][0]
    launch = {"tasks": [task_id], "model": "scripted", "endpoint": endpoint, "rounds": ROUNDS, "debug_rounds": 0,
              "profile_mode": "none"}

    redis_server.crash()
    started = time.monotonic()
    status, body = _api(stack, "/api/runs/", launch, token=token)
    answered_s = time.monotonic() - started
    assert status == 503, body
    body = json.loads(body)
    assert "job queue is unreachable" in body["detail"] and "saved" in body["detail"]
    run_id = body["runs"][0]["id"]
    assert _status(stack, run_id)[:3] == ("queued", "", 1)  # saved, in the outbox
    health = urllib.request.Request(stack.url + "/healthz")
    with pytest.raises(urllib.error.HTTPError) as down:
        urllib.request.urlopen(health, timeout=10)
    assert down.value.code == 503 and json.loads(down.value.read())["checks"]["broker"]["status"] == "down"

    redis_server.start()
    back = time.monotonic()
    _wait(stack, run_id, _started, "the start after the broker came back")
    MEASURED["launch_503_answer_s"] = round(answered_s, 2)
    MEASURED["broker_back_to_run_started_s"] = round(time.monotonic() - back, 2)
    _wait(stack, run_id, _ended, "the end")
    _assert_clean(stack, run_id)
    assert _status(stack, run_id)[2:] == (0, 1)  # sent once


def test_queued_runs_lost_with_a_broker_restart_without_persistence_are_sent_again_and_finish(faults, redis_server):
    stack = faults.stack
    running = _launch(stack, rounds=8)  # long enough to launch two more behind it
    _wait(stack, running, _started, "the first run's start")
    queued = _launch(stack, count=2)  # their messages wait in Redis: the only worker is busy
    statuses = [_status(stack, r) for r in queued] + [_status(stack, running)]
    assert all(s[:3] == ("queued", "", 0) for s in statuses[:2]) and statuses[2][0] == "running", statuses
    redis_server.crash()  # no append-only file: the two messages are gone
    redis_server.start()
    restarted = time.monotonic()
    _wait(stack, running, _ended, "the running run's end")
    _wait(stack, queued[0], _started, "the first lost run's start")
    idle = _db_time(stack, "finished_at", running)
    MEASURED["worker_idle_to_lost_run_started_s"] = round(
        (_db_time(stack, "started_at", queued[0]) - idle).total_seconds(), 2)
    for run_id in queued:
        _wait(stack, run_id, _ended, "the end")
    MEASURED["broker_restart_to_lost_runs_finished_s"] = round(time.monotonic() - restarted, 2)
    _assert_clean(stack, running, rounds=8)
    for run_id in queued:
        _assert_clean(stack, run_id)
    assert all(_status(stack, r)[3] >= 2 for r in queued)  # sent again by the reconciler
    MEASURED["runs_queued_before_restart"] = len(queued) + 1
    MEASURED["runs_lost"] = sum(_status(stack, r)[0] != "succeeded" for r in [running, *queued])


def test_a_stuck_queued_run_is_reconciled(faults):
    """A run recorded as sent whose message never reached the broker (the send 'succeeded' into a
    broker that then lost it): the reconciler sends it again once it is RUN_REDISPATCH_AFTER_SECONDS old."""
    stack = faults.stack
    run_id = _launch(stack, dispatch=False)
    stack.manage("shell", "-c", "from django.db.models.functions import Now; from apps.runs.models import Run; "
                 f"Run.objects.filter(pk={run_id}).update(dispatch_attempts=1, dispatched_at=Now())")
    marked = _db_time(stack, "dispatched_at", run_id)
    _wait(stack, run_id, _started, "the stuck run's start")
    MEASURED["stuck_run_to_started_s"] = round((_db_time(stack, "started_at", run_id) - marked).total_seconds(), 2)
    _wait(stack, run_id, _ended, "the end")
    _assert_clean(stack, run_id)
    assert _status(stack, run_id)[3] == 2  # sent again once
    assert REDISPATCH_AFTER_S <= MEASURED["stuck_run_to_started_s"] < REDISPATCH_AFTER_S + 15


def test_a_run_whose_whole_worker_is_killed_fails_as_worker_lost(faults):
    stack = faults.stack
    run_id = _launch(stack)
    _wait(stack, run_id, lambda ev: "turn.finished" in [t for _, t in ev], "the baseline turn")
    assert stack.query("SELECT current_run_id FROM fleet_worker WHERE pid=?", faults.worker.pid) == [(run_id,)]
    faults.kill_worker()
    killed = time.monotonic()
    deadline = killed + 30
    while True:  # `manage.py reconcile_runs`: the beat died with the worker
        out = stack.manage("reconcile_runs")
        if "failed as worker lost 1" in out:
            break
        assert time.monotonic() < deadline, out
        time.sleep(0.5)
    MEASURED["worker_killed_to_run_failed_s"] = round(time.monotonic() - killed, 2)
    status, error, *_ = _status(stack, run_id)
    assert status == "failed" and error.startswith("worker lost: ") and "stopped sending heartbeats at" in error
    _assert_clean(stack, run_id, end="run.failed")
    turns = stack.query("SELECT round_index FROM runs_turn WHERE run_id=?", run_id)
    assert (0,) in turns  # what was stored stays stored

    faults.start_worker()  # a new worker: the failed run is not started again, new runs flow
    after = _launch(stack)
    _wait(stack, after, _ended, "a run after the loss")
    _assert_clean(stack, after)
    assert _status(stack, run_id)[0] == "failed"
    assert "stopped sending heartbeats" in stack.query("SELECT error FROM runs_run WHERE id=?", run_id)[0][0]
