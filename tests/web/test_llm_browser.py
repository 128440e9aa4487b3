"""The endpoint page in a real browser (Debian's Chromium through Playwright) against a real stack (daphne,
SQLite) and the scripted OpenAI-compatible server over HTTP: run the connection test from the page, watch
its progress, read its report, set a model's prices; then the LLM-calls tab of a run whose calls carry
reasoning, a window and notes. Screenshots at 1440x900 and 1920x1080 go to a temp dir, or to
docs/screenshots/ with UPDATE_SCREENSHOTS=1.
"""

from __future__ import annotations

import json
import shutil

import pytest

from testing.scripted_llm import ScriptedLLM
from tests.support.stack import ROOT, make_stack, signed_in_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
QUIRKS = {"refuse_params": ["temperature"], "reasoning": "reasoning_content", "reasoning_tokens": True,
          "models_window_key": "max_model_len", "context_window": 32768, "context_error": "vllm"}
SIZES = {"1440": (1440, 900), "1920": (1920, 1080)}


@pytest.fixture(scope="module")
def llm():
    # A slow answer, so the page's progress line can be seen while the test runs.
    with ScriptedLLM([{"content": "ready", "delay_s": 1.5, "repeat": 100}], quirks=QUIRKS,
                     models=["reasoner-32b", "coder-7b"]) as server:
        yield server


def _reasoning_trajectory(path):
    """A demo trajectory whose Planner calls carry what a reasoning model on a small window leaves behind."""
    data = json.loads(sorted((ROOT / "demo" / "trajectories").glob("*.json"))[0].read_text())
    for turn in data["turns"]:
        for call in turn.get("agent_calls", []):
            if call["role"] == "planner":
                call.update(reasoning="The kernel is memory bound: each element is read once, so the plan keeps "
                                      "loads coalesced and vectorized before anything else.",
                            reasoning_tokens=812, context_window=32768, priced=False, cached_tokens=1024,
                            notes=["reasoner-32b refused temperature=0.2; sent without it",
                                   "prompt trimmed to fit the 32,768-token window: previous plan to 1,500 "
                                   "characters, evidence log to 6,000"])
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="module")
def stack(tmp_path_factory, llm, chromium):
    base = tmp_path_factory.mktemp("stack-llm")
    shutil.copytree(ROOT / "tasks", base / "tasks")
    stack = make_stack(base, base / "tasks", LLM_ENDPOINT_ALLOWED_HOSTS="127.0.0.1")
    stack.manage("import_trajectory", str(_reasoning_trajectory(base / "reasoning.json")))
    stack.manage("shell", "-c", "from django.contrib.auth import get_user_model; from apps.llm.models import "
                 "LLMEndpoint; LLMEndpoint.objects.create(name='local vLLM', owner=get_user_model().objects.get("
                 f"username='tester'), base_url='{llm.base_url}', model_names=['reasoner-32b', 'coder-7b'])")
    stack.start(worker=False)
    yield stack
    stack.stop()


def _page(browser, stack, size=(1440, 900)):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = signed_in_page(context, stack)
    errors = page.js_errors
    return context, page, errors


def test_the_connection_test_runs_from_the_endpoint_page_and_prices_are_set_there(browser, stack, llm, shots):
    context, page, errors = _page(browser, stack)
    endpoint_id = stack.query("SELECT id FROM llm_llmendpoint WHERE name='local vLLM'")[0][0]
    page.goto(f"{stack.url}/llm/endpoints/")
    assert "never run" in page.locator("table.grid").inner_text()
    page.goto(f"{stack.url}/llm/endpoints/{endpoint_id}/")
    assert page.locator("#connection-test").inner_text().count("Not run yet") == 1
    page.click("#run-test")
    page.wait_for_selector("#test-progress", state="visible")  # the progress line while the calls run
    assert page.locator("#run-test").is_disabled()
    page.wait_for_selector("#test-report", timeout=30_000)
    report = page.locator("#test-report").inner_text()
    assert "Passed" in report and "reasoner-32b" in report and "coder-7b" in report
    assert "refused temperature=0.2; sent without it" in report
    assert "32768" in report and "server /models" in report and "unknown" in report  # no price yet
    assert len(llm.refused) == 2  # temperature, once per model; learned for the runs to come

    # prices for one model, saved with the endpoint; the page then says whose prices are in use
    page.reload()
    rows = page.locator("table.model-settings tbody tr")
    assert "temperature" in page.locator("table.model-use").inner_text()
    assert rows.count() == 3  # the two tested models (their windows were learned) and an empty row
    row = rows.filter(has=page.locator("input[name$='-model'][value='coder-7b']"))
    row.locator("input[name$='-input_per_m']").fill("0.2")
    row.locator("input[name$='-output_per_m']").fill("0.6")
    page.click("form.endpoint-form button[type=submit]")
    page.wait_for_selector(".messages li:has-text('saved')")
    assert "set here" in page.locator("table.model-use").inner_text()
    assert stack.query("SELECT model, input_per_m FROM llm_endpointmodel WHERE input_per_m IS NOT NULL") == [
        ("coder-7b", 0.2)]
    page.click("#run-test")
    # the learned refusal is not sent again: a fresh report says so
    page.wait_for_selector("#test-report:has-text('not sent')", timeout=30_000)
    page.wait_for_function("document.querySelectorAll('#test-report tbody tr').length == 2")
    assert "0.0000" in page.locator("#test-report tbody tr", has_text="coder-7b").inner_text()
    for name, size in SIZES.items():
        page.set_viewport_size({"width": size[0], "height": size[1]})
        page.screenshot(path=str(shots / f"endpoint-{name}.png"), full_page=True)
    context.close()
    assert errors == [], errors


def test_the_llm_calls_tab_shows_reasoning_the_window_and_notes(browser, stack, shots):
    run_id = stack.query("SELECT id FROM runs_run ORDER BY id LIMIT 1")[0][0]
    for name, size in SIZES.items():
        context, page, errors = _page(browser, stack, size)
        page.goto(f"{stack.url}/runs/{run_id}/?turn=1.0")
        page.click(".tab-bar a[data-tab='calls']")
        tab = page.locator("#tab-calls")
        text = tab.inner_text()
        assert "/ 32768" in text and "unknown" in text and "refused temperature" in text and "812" in text
        page.click("#tab-calls details.call summary >> nth=0")
        assert "memory bound" in tab.locator("pre.reasoning").inner_text()
        tab.screenshot(path=str(shots / f"viewer-llm-calls-{name}.png"))
        context.close()
        assert errors == [], errors
