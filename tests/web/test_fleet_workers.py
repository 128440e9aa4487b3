"""Two real Celery GPU workers of different models on Redis, the web server, and runs launched through
the launch page: registration and heartbeats, routing by GPU model, the waiting status of a queue
without live worker, a killed worker shown dead, and a queued run taken once a worker comes back.

The workers have simulated GPUs (tests/support/simulated_gpu.py, model set by KW_SIMULATED_GPU) and
the scripted evaluator; Celery, Redis, the registry, the pages and the LLM calls are real.
"""

import json
import os
import re
import signal
import socket
import time

import pytest

from testing.reachable import reachable
from testing.scripted_llm import ScriptedLLM
from tests.conftest import FILE_OWNED_REDIS_DBS, REDIS_TEST_URL
from tests.support.scripted_eval import COMMAND, PLAN, kernel
from tests.support.specs import write_task
from tests.support.stack import ADMIN, ADMIN_PASSWORD, BIN, Browserless, make_stack

pytestmark = [pytest.mark.slow, pytest.mark.redis]
REDIS_URL = re.sub(r"/\d+$", "", REDIS_TEST_URL) + f"/{FILE_OWNED_REDIS_DBS[1]}"  # its own database: flushed here
HOST = socket.gethostname()
H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"
SCRIPT = [  # each answer takes a moment, so a run is seen in flight on its worker
    {"agent": "planner", "content": PLAN, "delay_s": 0.3, "repeat": 1000},
    {"agent": "coder", "content": kernel("ok 1.5"), "delay_s": 0.3, "repeat": 1000},
    {"agent": "compiler", "content": COMMAND, "delay_s": 0.3, "repeat": 1000},
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    if not reachable(REDIS_URL):
        if os.environ.get("CI"):
            pytest.fail(f"Redis is required in CI at {REDIS_URL}")
        pytest.skip(f"Redis not reachable at {REDIS_URL}")
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    base = tmp_path_factory.mktemp("fleet")
    write_task(base / "tasks", "vadd")
    with ScriptedLLM(SCRIPT) as llm:
        stack = make_stack(base, base / "tasks", REDIS_URL=REDIS_URL, WORKER_HEARTBEAT_SECONDS="0.5")
        stack.manage("shell", "-c", "from apps.llm.models import LLMEndpoint; "
                     f"LLMEndpoint.objects.create(name='scripted', base_url='{llm.base_url}')")
        stack.start(worker=False)
        start_worker(stack, "h100", "gpu0", "gpu.h100,gpu", H100, pool="prefork", index=0)
        start_worker(stack, "a100", "gpu1", "gpu.a100,gpu", A100, pool="solo", index=1)
        yield stack
        stack.stop()
        redis.Redis.from_url(REDIS_URL).flushdb()


def start_worker(stack, log: str, node: str, queues: str, gpu: str, pool: str, index: int) -> None:
    stack._spawn(log, [str(BIN / "celery"), "-A", "kernelweb", "worker", "-Q", queues, "-n", f"{node}@%h",
                       "--pool", pool, "--concurrency", "1", "--include", "tests.support.simulated_gpu",
                       "--loglevel", "INFO"], KW_SIMULATED_GPU=gpu, KW_SIMULATED_GPU_INDEX=str(index))


@pytest.fixture(scope="module")
def browser(stack):
    client = Browserless(stack.url)
    client.login(ADMIN, ADMIN_PASSWORD)
    return client


def workers(stack) -> dict[str, dict]:
    rows = stack.query("SELECT name, pid, gpu_name, queues, current_run_id, last_seen, stopped_at FROM fleet_worker")
    return {name: {"pid": pid, "gpu_name": gpu, "queues": json.loads(queues), "current_run": run, "last_seen": seen,
                   "stopped_at": stopped} for name, pid, gpu, queues, run, seen, stopped in rows}


def api_workers(browser) -> dict[str, dict]:
    return {w["name"]: w for w in json.loads(browser.get("/api/workers/").read())["results"]}


def wait(what: str, check, stack, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception:  # noqa: BLE001 - SQLite busy under a worker's write: look again
            value = None
        if value:
            return value
        time.sleep(0.2)
    logs = "\n".join(f"--- {name}\n{stack.log(name)[-3000:]}" for name in ("h100", "a100"))
    pytest.fail(f"timed out waiting for {what}; workers: {workers(stack)}\n{logs}")


def launch(stack, browser, gpu: str) -> int:
    task = stack.query("SELECT id FROM catalog_task WHERE operator='vadd' AND precision='fp32'")[0][0]
    endpoint = stack.query("SELECT id FROM llm_llmendpoint")[0][0]
    response = browser.post_form("/runs/launch/", {
        "tasks": task, "endpoint": endpoint, "model": "scripted", "rounds": 1, "debug_rounds": 0,
        "profile_mode": "none", "temperature": 0.2, "gpu": gpu})
    return int(re.search(r"/runs/(\d+)/$", response.geturl()).group(1))


def run_row(stack, run_id):
    return stack.query("SELECT status, queue, gpu_name, error FROM runs_run WHERE id=?", run_id)[0]


def test_each_worker_registers_its_gpu_and_queues_and_keeps_beating(stack, browser):
    names = {f"gpu0@{HOST}", f"gpu1@{HOST}"}
    first = wait("both workers to register", lambda: (w := workers(stack)) and set(w) == names and w, stack)
    assert (first[f"gpu0@{HOST}"]["gpu_name"], first[f"gpu0@{HOST}"]["queues"]) == (H100, ["gpu", "gpu.h100"])
    assert (first[f"gpu1@{HOST}"]["gpu_name"], first[f"gpu1@{HOST}"]["queues"]) == (A100, ["gpu", "gpu.a100"])
    wait("a heartbeat from each", lambda: all(workers(stack)[n]["last_seen"] > first[n]["last_seen"] for n in names),
         stack)
    listed = api_workers(browser)
    assert {n: (w["state"], w["gpu_model"]) for n, w in listed.items()} == {
        f"gpu0@{HOST}": ("alive", "h100"), f"gpu1@{HOST}": ("alive", "a100")}
    page = browser.get("/runs/launch/").read().decode()
    assert f'<option value="gpu.h100">H100 ({H100}) · 1 live worker</option>' in page


def test_runs_for_h100_go_to_the_h100_worker_only_while_the_a100_worker_idles(stack, browser):
    first, second = launch(stack, browser, "gpu.h100"), launch(stack, browser, "h100")
    h100 = f"gpu0@{HOST}"
    wait("the H100 worker to show its current run", lambda: workers(stack)[h100]["current_run"] == first, stack)
    page = browser.get("/workers/").read().decode()
    assert f'href="/runs/{first}/"' in page
    for run_id in (first, second):
        wait(f"run {run_id} to finish", lambda run_id=run_id: run_row(stack, run_id)[0] == "succeeded", stack)
        assert run_row(stack, run_id)[1:] == ("gpu.h100", H100, "")
    received = re.compile(r"Task runs\.execute_run\[[^\]]+\] received")
    assert len(received.findall(stack.log("h100"))) == 2
    assert not received.findall(stack.log("a100"))  # idle, consuming `gpu` too, yet never handed them
    wait("the H100 worker to be idle again", lambda: workers(stack)[h100]["current_run"] is None, stack)
    other = launch(stack, browser, "gpu.a100")
    wait("the A100 run", lambda: run_row(stack, other)[0] == "succeeded", stack)
    assert run_row(stack, other)[2] == A100
    # Each run records the worker and the GPU (index, UUID) that ran it; the fleet page counts them.
    where = "SELECT worker_name, gpu_index, gpu_uuid FROM runs_run WHERE id=?"
    assert stack.query(where, first)[0] == (h100, 0, "GPU-simulated-0")
    assert stack.query(where, other)[0] == (f"gpu1@{HOST}", 1, "GPU-simulated-1")
    page = browser.get("/workers/").read().decode()
    assert re.search(rf"<code>{re.escape(h100)}</code>.*?<td class=\"num\">2</td>", page, re.S), page
    viewer = browser.get(f"/runs/{other}/").read().decode()
    assert f'title="GPU-simulated-1">GPU 1 · gpu1@{HOST}</small>' in viewer


def test_a_run_for_a_model_nobody_serves_waits_with_a_clear_status(stack, browser):
    run_id = launch(stack, browser, "gpu.l40s")
    expected = "waiting: no live worker for queue gpu.l40s (no worker has consumed it yet)"
    assert expected in browser.get(f"/runs/{run_id}/").read().decode()
    assert expected in browser.get("/runs/").read().decode()
    time.sleep(1.5)  # three heartbeats: neither worker takes it
    assert run_row(stack, run_id)[0] == "queued"


def test_a_killed_worker_is_dead_after_missed_beats_and_its_queued_run_runs_when_one_is_back(stack, browser):
    a100 = f"gpu1@{HOST}"
    os.kill(workers(stack)[a100]["pid"], signal.SIGKILL)  # no goodbye: only the silence tells
    wait("the A100 worker to be shown dead", lambda: api_workers(browser)[a100]["state"] == "dead", stack)
    assert workers(stack)[a100]["stopped_at"] is None
    run_id = launch(stack, browser, "gpu.a100")
    page = browser.get(f"/runs/{run_id}/").read().decode()
    assert re.search(rf"waiting: no live worker for queue gpu\.a100 \(last seen [^)]* ago: {re.escape(a100)}\)", page)
    assert 'class="badge dead">dead<' in browser.get("/workers/").read().decode()

    start_worker(stack, "a100-again", "gpu1", "gpu.a100,gpu", A100, pool="solo", index=1)
    wait("the queued run to be taken by the new A100 worker",
         lambda: run_row(stack, run_id)[0] == "succeeded", stack)
    assert run_row(stack, run_id)[2] == A100 and api_workers(browser)[a100]["state"] == "alive"


def test_a_worker_stopped_cleanly_is_shown_stopped_at_once(stack, browser):
    h100 = f"gpu0@{HOST}"
    process = next(p for p, _ in stack.processes if p.pid == workers(stack)[h100]["pid"])
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    assert api_workers(browser)[h100]["state"] == "stopped"
    assert "waiting: no live worker for queue gpu.h100" in browser.get(
        f"/runs/{launch(stack, browser, 'gpu.h100')}/").read().decode()
