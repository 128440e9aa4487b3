"""An experiment over 12 tasks, end to end, as CI runs it: daphne, a real Celery worker on Redis, SQLite, the
scripted LLM server as the endpoint, and no GPU. Launched from the page, every run must end failed with the
clear no-GPU reason, and every analysis must count the 12 trials as failures.

Nothing is replaced but the LLM (which these runs never reach: without a GPU the worker stops before the
pipeline starts).
"""

import csv
import io
import json
import os
import time

import pytest

from testing.reachable import reachable
from testing.scripted_llm import ScriptedLLM
from tests.conftest import REDIS_TEST_URL
from tests.support.specs import write_task
from tests.support.stack import ADMIN_PASSWORD, Browserless, make_stack
from worker.engine import toolchain

pytestmark = [pytest.mark.slow, pytest.mark.redis]
OPERATORS = ("vadd", "vsub", "vmul", "vdiv", "vmax", "vmin")  # each in FP32 and BF16: 12 tasks


@pytest.fixture(scope="module")
def llm():
    with ScriptedLLM([{"content": "never asked", "repeat": 1000}]) as server:
        yield server


@pytest.fixture(scope="module")
def stack(tmp_path_factory, llm):
    if toolchain.detect().gpu is not None:
        pytest.skip("asserts the no-GPU ending; on a GPU host the runs go on to the pipeline")
    if not reachable(REDIS_TEST_URL):
        if os.environ.get("CI"):
            pytest.fail(f"Redis is required in CI at {REDIS_TEST_URL}")
        pytest.skip(f"Redis not reachable at {REDIS_TEST_URL}")
    import redis

    redis.Redis.from_url(REDIS_TEST_URL).flushdb()  # no stale Celery messages from earlier tests
    base = tmp_path_factory.mktemp("stack-experiment")
    for name in OPERATORS:
        write_task(base / "tasks", name)
    stack = make_stack(base, base / "tasks", REDIS_URL=REDIS_TEST_URL)
    stack.manage("shell", "-c", "from apps.llm.models import LLMEndpoint; LLMEndpoint.objects.create("
                 f"name='scripted', base_url='{llm.base_url}', model_names=['scripted'])")
    stack.start()
    yield stack
    stack.stop()


def _json(browser: Browserless, path: str):
    return json.loads(browser.get(path).read())


def _wait_until_done(stack, browser, experiment_id: int, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        detail = _json(browser, f"/api/experiments/{experiment_id}/")
        if not detail["progress"]["is_active"]:
            return detail
        time.sleep(0.5)
    pytest.fail(f"the experiment is still active: {detail['progress']['counts']}\n" + stack.log("worker")[-4000:])


def test_an_experiment_over_12_tasks_without_a_gpu_ends_with_12_counted_failures(stack, llm):
    assert stack.query("SELECT COUNT(*) FROM catalog_task WHERE enabled")[0][0] == 12
    browser = Browserless(stack.url)
    browser.login("tester", ADMIN_PASSWORD)
    endpoint = stack.query("SELECT id FROM llm_llmendpoint WHERE name='scripted'")[0][0]
    response = browser.post_form("/experiments/launch/", {
        "name": "CI, no GPU", "suite": "testsuite", "seeds": 1, "endpoint": endpoint, "model": "scripted",
        "rounds": 1, "debug_rounds": 0, "profile_mode": "none", "temperature": 0})
    path = response.geturl().removeprefix(stack.url)
    assert path.startswith("/experiments/") and path.rstrip("/").split("/")[-1].isdigit(), path
    experiment_id = int(path.rstrip("/").split("/")[-1])

    detail = _wait_until_done(stack, browser, experiment_id)
    progress = detail["progress"]
    assert (progress["total"], progress["done"], progress["counts"]["failed"]) == (12, 12, 12)
    assert {(r["operator"], r["precision"]) for r in progress["rows"]} == {
        (op, p) for op in OPERATORS for p in ("fp32", "bf16")}
    for row in progress["rows"]:
        assert row["status"] == "failed" and row["error"].startswith("No NVIDIA GPU on worker host"), row
        assert "launch the run again" in row["error"]
    # every run went through the worker (claimed, then failed there), never through the LLM
    workers = stack.query("SELECT DISTINCT worker_host FROM runs_run")
    assert len(workers) == 1 and workers[0][0]
    assert llm.requests == []

    analyses = _json(browser, f"/api/experiments/{experiment_id}/analyses/")
    assert (analyses["trials"], analyses["correct"]) == (12, 0)
    tables = analyses["tables"]
    assert [(r["trials"], r["fast_p"]) for r in tables["fast_p"]["rows"]] == [(12, 0.0)] * 6
    curve = tables["success_curve"]["rows"]
    assert {(r["precision"], r["trials"]) for r in curve} == {("all", 12), ("bf16", 6), ("fp32", 6)}
    assert {r["rate"] for r in curve} == {0.0} and len(curve) == 3 * 7
    assert tables["geomean_speedup"]["rows"] == [{"correct": 0, "trials": 12, "geomean_speedup": None}]
    assert tables["bottleneck_migration"]["rows"][-1]["total"] == 0
    assert {r["status"] for r in tables["outcomes"]["rows"]} == {"failed"}

    fp32 = _json(browser, f"/api/experiments/{experiment_id}/analyses/?precision=fp32")
    assert (fp32["trials"], fp32["correct"]) == (6, 0)

    # the page and its CSV say the same
    page = browser.get(f"/experiments/{experiment_id}/").read().decode()
    assert "12 of 12 done" in page and 'data-active="0"' in page and "hx-trigger" not in page
    rows = list(csv.reader(io.StringIO(browser.get(f"/experiments/{experiment_id}/export/fast_p.csv").read()
                                       .decode())))
    assert rows[0] == ["p", "fast", "trials", "fast_p"] and [r[1:] for r in rows[1:]] == [["0", "12", "0.0"]] * 6
