"""The product in a real browser: Debian's Chromium through Playwright against a real stack (daphne, a
Celery worker, SQLite, the embedded broker), the scripted LLM over HTTP.

The worker has a simulated GPU (tests/support/simulated_gpu.py), so turns arrive live on this
machine too. Screenshots of the viewer, catalog and showcase (real H200 trajectories from demo/) go
to a temp dir, or to docs/screenshots/ with UPDATE_SCREENSHOTS=1.
"""

import re
import shutil
from io import StringIO

import pytest

from testing.scripted_llm import ScriptedLLM
from tests.support.scripted_eval import COMMAND, PLAN, kernel
from tests.support.specs import write_task
from tests.support.stack import ROOT, make_stack, signed_in_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SCRIPT = [
    {"agent": "planner", "content": PLAN, "delay_s": 0.7, "repeat": 100},
    {"agent": "coder", "content": kernel("compile_error"), "delay_s": 0.3},
    {"agent": "debug", "content": "Declare the index before use.", "delay_s": 0.3, "repeat": 100},
    {"agent": "coder", "content": kernel("ok 1.6"), "delay_s": 0.3, "repeat": 100},
    {"agent": "compiler", "content": COMMAND, "delay_s": 0.3, "repeat": 100},
]


@pytest.fixture(scope="module")
def llm():
    with ScriptedLLM(SCRIPT, loop=True) as server:
        yield server


@pytest.fixture(scope="module")
def stack(tmp_path_factory, llm, chromium):
    base = tmp_path_factory.mktemp("stack-browser")
    shutil.copytree(ROOT / "tasks", base / "tasks")  # the real library (for the demo runs) ...
    write_task(base / "tasks", "vadd")  # ... and the small task the scripted agents optimize
    stack = make_stack(base, base / "tasks")
    demo = sorted(str(p) for p in (ROOT / "demo" / "trajectories").glob("*.json"))
    stack.manage("import_trajectory", *demo, "--public")
    stack.manage("shell", "-c", "from apps.llm.models import LLMEndpoint; LLMEndpoint.objects.create("
                 f"name='scripted', base_url='{llm.base_url}', model_names=['scripted'])")
    stack.start(worker_args=("--include", "tests.support.simulated_gpu"))
    yield stack
    stack.stop()


@pytest.fixture
def page(browser, stack):
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = signed_in_page(context, stack)
    errors = page.js_errors
    yield page
    context.close()
    assert errors == [], f"JavaScript errors: {errors}"


def _vadd_id(stack) -> int:
    return stack.query("SELECT id FROM catalog_task WHERE operator='vadd' AND precision='fp32'")[0][0]


def test_launch_watch_live_navigate_diff_share_and_submit_a_manual_turn(page, stack, browser):
    page.goto(f"{stack.url}/runs/launch/?task={_vadd_id(stack)}")
    assert page.locator(f"input[name=tasks][value='{_vadd_id(stack)}']").is_checked()
    page.select_option("select[name=endpoint]", label="scripted")
    page.fill("input[name=model]", "scripted")
    page.fill("input[name=rounds]", "2")
    page.fill("input[name=debug_rounds]", "1")
    page.select_option("select[name=profile_mode]", "none")
    page.click("form.launch-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    run_id = int(page.url.rstrip("/").split("/")[-1])

    # live: turns appear without a reload, the run ends as succeeded
    page.wait_for_selector("#timeline .turn[data-label='1.1']", timeout=60_000)
    page.wait_for_selector("#run-status.status-succeeded", timeout=60_000)
    page.wait_for_selector("#timeline .turn[data-label='2.0']", timeout=10_000)
    labels = page.locator("#timeline .turn").evaluate_all("els => els.map(e => e.dataset.label)")
    assert labels == ["0.0", "1.0", "1.1", "2.0"]
    # the events pane got the run's events live, every seq once and in order, up to the terminal one
    page.wait_for_selector("#events li:last-child code:text-is('run.succeeded')", timeout=10_000)
    seqs = page.locator("#events li").evaluate_all("els => els.map(e => Number(e.dataset.seq))")
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > 5, seqs

    # open a turn: the panel is swapped in place and the URL follows
    page.click("#timeline .turn[data-label='1.0'] a")
    page.wait_for_selector(".turn-toolbar[data-selected='1.0']")
    page.wait_for_url(re.compile(r".*\?turn=1\.0$"))
    page.click(".tab-bar a[data-tab='compile']")
    assert page.locator("#tab-compile").is_visible() and not page.locator("#tab-plan").is_visible()
    assert "identifier" in page.locator("#tab-compile pre.log").inner_text()
    # keyboard: j moves to the next turn
    page.keyboard.press("j")
    page.wait_for_selector(".turn-toolbar[data-selected='1.1']")
    page.wait_for_selector("#timeline .turn.selected[data-label='1.1']")
    # diff modes
    page.click(".diff-modes a[data-against='parent']")
    page.wait_for_selector("#diff[data-against='parent'] .cm-mergeView")  # the merge view (test_code_view_browser.py)
    assert page.locator("#diff .cm-merge-b .cm-changedLine").count() > 0
    page.click(".diff-modes a[data-against='baseline']")
    page.wait_for_selector("#diff[data-against='baseline']")

    # share the comparison, open it logged out
    page.click(".sc-share-form button")
    page.wait_for_url(re.compile(r".*/s/[A-Za-z0-9_-]{20}/$"))  # secrets.token_urlsafe(15)
    share_url = page.url
    anonymous = browser.new_context()
    shared = anonymous.new_page()
    response = shared.goto(share_url)
    assert response.status == 200
    # the share page's code view (a merge view: read its document, collapsed regions are not in the page text)
    shared.wait_for_selector(".sc-diff-view .cm-mergeView")
    assert "vadd_optimized" in shared.evaluate("document.querySelector('.sc-diff-view').kwMerge.b.state.doc.toString()")
    assert shared.goto(f"{stack.url}/runs/{run_id}/").status == 404  # the run itself stays private
    anonymous.close()

    # a manual turn from the editor, evaluated like any turn and shown live
    page.goto(f"{stack.url}/runs/{run_id}/?turn=1.1")
    page.click(".tab-bar a[data-tab='edit']")
    editor = page.locator("#tab-edit .manual-main .cm-content")  # the baseline beside it is read-only
    editor.click()
    page.keyboard.press("Control+Home")
    page.keyboard.type("// outcome: ok 2.5\n")
    assert page.locator("#tab-edit textarea[name=code]").input_value().startswith("// outcome: ok 2.5")
    page.click("#tab-edit button[type=submit]")
    page.wait_for_selector(".messages li:has-text('queued for evaluation')")
    page.wait_for_selector("#timeline .turn[data-label='3.0'] .verdict:has-text('ok')", timeout=30_000)
    assert stack.query("SELECT kind, score FROM runs_turn WHERE run_id=? AND round_index=3", run_id) == [
        ("manual", 2.5)]


def test_screenshots_of_viewer_catalog_and_showcase(page, stack, shots):
    softmax = stack.query("SELECT r.id FROM runs_run r JOIN catalog_task t ON r.task_id=t.id "
                          "WHERE t.operator='softmax' AND r.origin LIKE 'import:%'")[0][0]
    page.goto(f"{stack.url}/runs/{softmax}/")
    page.wait_for_selector("[data-chart='score'] canvas")
    page.screenshot(path=str(shots / "viewer.png"), full_page=True)
    page.click(".tab-bar a[data-tab='profile']")
    page.locator(".tabs").screenshot(path=str(shots / "viewer-profile.png"))
    fused = stack.query("SELECT r.id FROM runs_run r JOIN catalog_task t ON r.task_id=t.id "
                        "WHERE t.operator='scale_bias_leaky_relu' AND r.origin LIKE 'import:%'")[0][0]
    page.goto(f"{stack.url}/runs/{fused}/?turn=1.1")
    page.wait_for_selector(".turn-toolbar[data-selected='1.1']")
    page.wait_for_selector("#diff .cm-mergeView")
    # the KernelBench file, side by side (read from the editor: a collapsed region is not in the page's text)
    assert "load_inline" in page.evaluate("document.getElementById('diff').kwMerge.b.state.doc.toString()")
    page.screenshot(path=str(shots / "viewer-kernelbench.png"), full_page=True)
    page.goto(f"{stack.url}/tasks/")
    page.screenshot(path=str(shots / "catalog.png"), full_page=True)
    page.goto(f"{stack.url}/showcase/")
    page.screenshot(path=str(shots / "showcase.png"), full_page=True)
    page.click("a[href*='/showcase/'][href*='softmax']")
    page.wait_for_load_state()
    page.screenshot(path=str(shots / "showcase-operator.png"), full_page=True)
    for name in ("viewer", "viewer-profile", "viewer-kernelbench", "catalog", "showcase", "showcase-operator"):
        assert (shots / f"{name}.png").stat().st_size > 10_000, name


def test_imported_demo_runs_render_in_the_viewer_without_errors(page, stack):
    out = StringIO()
    for (run_id,) in stack.query("SELECT id FROM runs_run WHERE origin LIKE 'import:%'"):
        page.goto(f"{stack.url}/runs/{run_id}/")
        page.wait_for_selector(".turn-toolbar")
        out.write(page.locator("#run-header").inner_text())
    assert "NVIDIA H200" in out.getvalue()
