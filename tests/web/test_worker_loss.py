"""A Celery prefork child killed with SIGKILL in the middle of a run, on Redis.

The worker runs with late acks and reject-on-worker-lost, so the broker hands the message out
again; the run is taken over once (`run.requeued`) and restarted, and a second loss fails it with
the reason. The worker has a simulated GPU (tests/support/simulated_gpu.py); the rest is real.
"""

import os
import signal
import time
from pathlib import Path

import pytest

from testing.reachable import reachable
from testing.scripted_llm import ScriptedLLM
from tests.conftest import REDIS_TEST_URL
from tests.support.scripted_eval import COMMAND, PLAN, kernel
from tests.support.specs import write_task
from tests.support.stack import make_stack

pytestmark = [pytest.mark.slow, pytest.mark.redis]
ROUNDS = 2
SCRIPT = [  # every answer takes a moment, so a kill lands while the run is in flight
    {"agent": "planner", "content": PLAN, "delay_s": 0.4, "repeat": 1000},
    {"agent": "coder", "content": kernel("ok 1.5"), "delay_s": 0.4, "repeat": 1000},
    {"agent": "compiler", "content": COMMAND, "delay_s": 0.4, "repeat": 1000},
]


@pytest.fixture(scope="module")
def llm():
    with ScriptedLLM(SCRIPT) as server:
        yield server


@pytest.fixture(scope="module")
def stack(tmp_path_factory, llm):
    if not reachable(REDIS_TEST_URL):
        if os.environ.get("CI"):
            pytest.fail(f"Redis is required in CI at {REDIS_TEST_URL}")
        pytest.skip(f"Redis not reachable at {REDIS_TEST_URL}")
    import redis

    redis.Redis.from_url(REDIS_TEST_URL).flushdb()
    base = tmp_path_factory.mktemp("stack-loss")
    write_task(base / "tasks", "vadd")
    stack = make_stack(base, base / "tasks", REDIS_URL=REDIS_TEST_URL)
    stack.manage("shell", "-c", "from apps.llm.models import LLMEndpoint; "
                 f"LLMEndpoint.objects.create(name='scripted', base_url='{llm.base_url}')")
    stack.start_worker("--include", "tests.support.simulated_gpu", pool="prefork")
    yield stack
    stack.stop()


def _events(stack, run_id) -> list[tuple[int, str]]:
    return stack.query("SELECT seq, type FROM runs_runevent WHERE run_id=? ORDER BY seq", run_id)


def _wait(stack, run_id, predicate, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = _events(stack, run_id)
        if predicate(events):
            return events
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}; events: {_events(stack, run_id)}\n"
                + stack.log("worker")[-4000:])


def _pool_child(stack) -> int:
    """The pid of the prefork child that executes tasks (the worker's main process is the parent)."""
    main = stack.processes[0][0].pid
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = [int(p) for p in Path(f"/proc/{main}/task/{main}/children").read_text().split()]
        if children:
            return children[0]
        time.sleep(0.1)
    pytest.fail("the Celery worker has no pool child:\n" + stack.log("worker")[-3000:])


def _kill_mid_run(stack, run_id, after_seq: int) -> None:
    """SIGKILL the pool child once the run has finished a turn after `after_seq` (it is then waiting
    on the LLM for the next one)."""
    _wait(stack, run_id, lambda ev: any(s > after_seq and t == "turn.finished" for s, t in ev),
          "a finished turn")
    os.kill(_pool_child(stack), signal.SIGKILL)


def _status(stack, run_id):
    return stack.query("SELECT status, attempts, error FROM runs_run WHERE id=?", run_id)[0]


def test_a_killed_worker_child_requeues_the_run_once_and_it_finishes_without_duplicate_turns(stack):
    run_id = stack.create_runs(ROUNDS)[0]
    _kill_mid_run(stack, run_id, after_seq=0)
    events = _wait(stack, run_id, lambda ev: ev[-1][1] in ("run.succeeded", "run.failed"), "the end of the run")
    types = [t for _, t in events]
    assert types.count("run.requeued") == 1 and types[-1] == "run.succeeded", types
    status, attempts, error = _status(stack, run_id)
    assert (status, attempts, error) == ("succeeded", 2, "")
    turns = stack.query("SELECT round_index, debug_index FROM runs_turn WHERE run_id=? ORDER BY 1, 2", run_id)
    assert turns == [(r, 0) for r in range(ROUNDS + 1)]  # baseline + R rounds, each stored once
    calls = stack.query("SELECT COUNT(*) FROM runs_agentcall c JOIN runs_turn t ON c.turn_id=t.id "
                        "WHERE t.run_id=? AND t.round_index=1", run_id)[0][0]
    assert calls >= 3  # the restarted round's calls are stored beside the lost attempt's


def test_a_run_whose_worker_is_lost_twice_fails_with_the_reason(stack):
    run_id = stack.create_runs(ROUNDS)[0]
    _kill_mid_run(stack, run_id, after_seq=0)
    requeued = _wait(stack, run_id, lambda ev: "run.requeued" in [t for _, t in ev], "the requeue")
    _kill_mid_run(stack, run_id, after_seq=requeued[-1][0])
    _wait(stack, run_id, lambda ev: ev[-1][1] == "run.failed", "the run to fail")
    status, attempts, error = _status(stack, run_id)
    assert (status, attempts) == ("failed", 2)
    assert "worker running this run was lost 2 times" in error and "launch the run again" in error
