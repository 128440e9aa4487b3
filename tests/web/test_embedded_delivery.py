"""End to end, in the embedded mode and with Redis: a Celery worker process appends events, a
websocket client connected to the web process gets every one of them, in order, live and on resume."""

import asyncio
import json
import os
import re
import shutil

import pytest
import websockets

from testing.reachable import reachable
from tests.conftest import REDIS_TEST_URL
from tests.support.specs import write_task
from tests.support.stack import ADMIN, ADMIN_PASSWORD, Browserless, make_stack

pytestmark = pytest.mark.slow
TERMINAL = {"run.succeeded", "run.failed", "run.cancelled"}


@pytest.fixture(scope="module", params=["embedded", "redis"])
def stack(request, tmp_path_factory):
    extra = {}
    if request.param == "redis":
        if not reachable(REDIS_TEST_URL):
            if os.environ.get("CI"):
                pytest.fail(f"Redis is required in CI at {REDIS_TEST_URL}")
            pytest.skip(f"Redis not reachable at {REDIS_TEST_URL}")
        import redis

        redis.Redis.from_url(REDIS_TEST_URL).flushdb()  # no stale Celery messages from earlier runs
        # Slow DB tail: with Redis, live delivery must come through the layer.
        extra = {"REDIS_URL": REDIS_TEST_URL, "EVENT_POLL_SECONDS": "30"}
    base = tmp_path_factory.mktemp(f"stack-{request.param}")
    write_task(base / "tasks", "vadd")
    stack = make_stack(base, base / "tasks", **extra)
    stack.start()
    yield stack
    stack.stop()


def _launch(stack) -> tuple[Browserless, int]:
    browser = Browserless(stack.url)
    browser.login(ADMIN, ADMIN_PASSWORD)
    task_id = stack.query("SELECT id FROM catalog_task WHERE operator='vadd' AND precision='fp32'")[0][0]
    response = browser.post_form("/runs/launch/", {
        "tasks": task_id, "model": "scripted", "rounds": 1, "debug_rounds": 0,
        "profile_mode": "none", "temperature": 0,
    })
    run_id = int(response.geturl().rstrip("/").split("/")[-1])
    return browser, run_id


async def _collect(stack, browser, run_id, after=0, timeout=60):
    uri = f"ws://127.0.0.1:{stack.port}/ws/runs/{run_id}/events/?after={after}"
    headers = {"Cookie": f"sessionid={browser.cookie('sessionid')}", "Origin": stack.url}
    events = []
    async with websockets.connect(uri, additional_headers=headers, open_timeout=10) as socket:
        async with asyncio.timeout(timeout):
            while not events or events[-1]["type"] not in TERMINAL:
                events.append(json.loads(await socket.recv()))
    return events


def test_worker_events_reach_the_browser_in_order(stack):
    browser, run_id = _launch(stack)
    try:
        events = asyncio.run(_collect(stack, browser, run_id))
    except TimeoutError:
        pytest.fail("no terminal event; worker log:\n" + stack.log("worker")[-3000:])
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1))
    types = [e["type"] for e in events]
    assert types[:3] == ["run.queued", "run.running", "worker.info"]
    worker_host = stack.query("SELECT worker_host FROM runs_run WHERE id=?", run_id)[0][0]
    assert worker_host and events[2]["payload"]["host"] == worker_host  # written by the worker process
    if events[2]["payload"]["gpu"] is None:  # no GPU here: the worker fails the run and says why
        assert types[-1] == "run.failed" and "No NVIDIA GPU on worker host" in events[-1]["payload"]["error"]
    else:  # the collector stops at the terminal event: the run ended on its own, it was not cancelled
        assert types[-1] in ("run.succeeded", "run.failed")


def test_a_client_resuming_from_a_seq_gets_exactly_the_rest(stack):
    browser, run_id = _launch(stack)
    full = asyncio.run(_collect(stack, browser, run_id))
    resumed = asyncio.run(_collect(stack, browser, run_id, after=2))
    assert resumed == full[2:]


def test_an_idle_stream_stays_open_and_delivers_the_next_event(stack):
    """Regression: with redis-py's default 5 s socket timeout, Redis-layer consumers died after 5 s idle."""
    browser, run_id = _launch(stack)
    events = asyncio.run(_collect(stack, browser, run_id))

    async def idle_then_event():
        uri = f"ws://127.0.0.1:{stack.port}/ws/runs/{run_id}/events/?after={events[-1]['seq']}"
        headers = {"Cookie": f"sessionid={browser.cookie('sessionid')}", "Origin": stack.url}
        async with websockets.connect(uri, additional_headers=headers, open_timeout=10) as socket:
            await asyncio.sleep(7)
            code = f"from apps.runs.events import event_append; event_append({run_id}, 'run.note', {{}})"
            await asyncio.to_thread(stack.manage, "shell", "-c", code)
            return json.loads(await asyncio.wait_for(socket.recv(), 10))

    late = asyncio.run(idle_then_event())
    assert (late["seq"], late["type"]) == (events[-1]["seq"] + 1, "run.note")


@pytest.mark.browser
def test_run_page_shows_the_worker_events_live_in_chromium(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (the .ci/run script installs Debian's chromium)")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    write_task(tmp_path / "tasks", "vadd")
    stack = make_stack(tmp_path, tmp_path / "tasks")
    stack.start(worker=False)  # the page must be open before the worker picks the run up
    try:
        browser_http, run_id = _launch(stack)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            context = browser.new_context()
            context.add_cookies([{"name": "sessionid", "value": browser_http.cookie("sessionid"), "url": stack.url}])
            page = context.new_page()
            page.goto(f"{stack.url}/runs/{run_id}/")
            expect(page.locator("#run-status")).to_have_text(re.compile("queued", re.I))
            expect(page.locator("#stream-state")).to_have_text("live")
            stack.start_worker()
            expect(page.locator("#run-status")).to_have_text(re.compile("failed", re.I), timeout=60_000)
            expect(page.locator("#stream-state")).to_have_text("finished")
            seqs = page.locator("#events li").evaluate_all("els => els.map(e => Number(e.dataset.seq))")
            assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 4
            browser.close()
    finally:
        stack.stop()
