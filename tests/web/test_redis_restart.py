"""Redis killed and restarted while a run is in flight and another is queued: a fault the stack must survive.

A private redis-server (append-only file, fsync always, as the deployment guide asks) is the Celery
broker and the Channels layer of a real stack: daphne, a Celery prefork worker with a simulated GPU
(tests/support/simulated_gpu.py) and the scripted LLM. A websocket client follows the running run
the way static/js/run-events.js does: on a dropped connection it reconnects with ?after=<last seq>.
While Redis is down the worker keeps writing events to the database; the live layer misses them and
the DB replay on reconnect covers the gap. The queued run survives in Redis's append-only file.
"""

import asyncio
import json
import shutil
import threading
import time

import pytest
import websockets

from testing.scripted_llm import ScriptedLLM
from tests.support.scripted_eval import COMMAND, PLAN, kernel
from tests.support.specs import write_task
from tests.support.stack import ADMIN, ADMIN_PASSWORD, Browserless, PrivateRedis, make_stack

pytestmark = [pytest.mark.slow, pytest.mark.redis]
ROUNDS = 3
TERMINAL = {"run.succeeded", "run.failed", "run.cancelled"}
SCRIPT = [
    {"agent": "planner", "content": PLAN, "delay_s": 0.5, "repeat": 1000},
    {"agent": "coder", "content": kernel("ok 1.5"), "delay_s": 0.5, "repeat": 1000},
    {"agent": "compiler", "content": COMMAND, "delay_s": 0.5, "repeat": 1000},
]


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = PrivateRedis(tmp_path_factory.mktemp("redis"), durable=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server):
    with ScriptedLLM(SCRIPT) as llm:
        base = tmp_path_factory.mktemp("stack-redis-restart")
        write_task(base / "tasks", "vadd")
        stack = make_stack(base, base / "tasks", REDIS_URL=redis_server.url, EVENT_POLL_SECONDS="1",
                           CHANNELS_PREFIX="kw-restart")
        stack.manage("shell", "-c", "from apps.llm.models import LLMEndpoint; "
                     f"LLMEndpoint.objects.create(name='scripted', base_url='{llm.base_url}')")
        stack.start(worker=False)
        stack.start_worker("--include", "tests.support.simulated_gpu", pool="prefork")
        yield stack
        stack.stop()


def _db_events(stack, run_id):
    return stack.query("SELECT seq, type FROM runs_runevent WHERE run_id=? ORDER BY seq", run_id)


def _wait(stack, run_id, predicate, what, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = _db_events(stack, run_id)
        if predicate(events):
            return events
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}; events: {_db_events(stack, run_id)}\n" + stack.log("worker")[-4000:])


async def _follow(stack, browser, run_id, received: list, reconnects: list, timeout=150):
    """Like run-events.js: keep a socket open, and after a drop reconnect from the last seq seen."""
    headers = {"Cookie": f"sessionid={browser.cookie('sessionid')}", "Origin": stack.url}
    async with asyncio.timeout(timeout):
        while not received or received[-1]["type"] not in TERMINAL:
            after = received[-1]["seq"] if received else 0
            uri = f"ws://127.0.0.1:{stack.port}/ws/runs/{run_id}/events/?after={after}"
            try:
                async with websockets.connect(uri, additional_headers=headers, open_timeout=5) as socket:
                    while not received or received[-1]["type"] not in TERMINAL:
                        event = json.loads(await socket.recv())
                        if not received or event["seq"] > received[-1]["seq"]:  # drop duplicates
                            received.append(event)
            # Any failed connection is retried, as run-events.js does: a connect while Redis comes back can outlast
            # daphne's websocket connect timeout, which then closes the socket mid-handshake (InvalidMessage).
            except (OSError, websockets.exceptions.WebSocketException, TimeoutError):
                reconnects.append(time.monotonic())
                await asyncio.sleep(0.5)


def test_runs_in_flight_and_queued_survive_a_redis_crash_and_no_event_is_lost(stack, redis_server):
    browser = Browserless(stack.url)
    browser.login(ADMIN, ADMIN_PASSWORD)
    running, queued = stack.create_runs(ROUNDS, count=2)
    received, reconnects = [], []
    follower = threading.Thread(target=lambda: asyncio.run(_follow(stack, browser, running, received, reconnects)))
    follower.start()

    _wait(stack, running, lambda ev: ("turn.finished" in [t for _, t in ev]), "the baseline turn")
    redis_server.crash()
    down_since = max(s for s, _ in _db_events(stack, running))
    # The worker goes on writing events to the database meanwhile: wait until it has (a fixed sleep was too
    # short on a loaded machine), but keep Redis down at least 4 s so the websocket surely drops.
    deadline, down_at = time.monotonic() + 90, time.monotonic()
    while time.monotonic() < deadline:
        written_while_down = max(s for s, _ in _db_events(stack, running)) - down_since
        if written_while_down > 0 and time.monotonic() - down_at >= 4:
            break
        time.sleep(0.2)
    redis_server.start()

    events = _wait(stack, running, lambda ev: ev[-1][1] in TERMINAL, "the running run to end")
    follower.join(timeout=60)
    assert not follower.is_alive(), "the websocket client never saw the end of the run"
    assert written_while_down > 0, "the run did not progress while Redis was down; the test proves nothing"
    assert events[-1][1] == "run.succeeded", stack.log("worker")[-3000:]
    assert [e["seq"] for e in received] == [s for s, _ in events]  # every event, once, in order
    assert reconnects, "the websocket never dropped: Redis was not really gone"
    turns = stack.query("SELECT round_index FROM runs_turn WHERE run_id=? ORDER BY 1", running)
    assert turns == [(r,) for r in range(ROUNDS + 1)]

    # The queued run was only in Redis when it crashed: the append-only file brought it back.
    after = _wait(stack, queued, lambda ev: ev[-1][1] in TERMINAL, "the queued run to run", timeout=180)
    assert after[-1][1] == "run.succeeded"
    assert stack.query("SELECT status FROM runs_run WHERE id=?", queued)[0][0] == "succeeded"
