"""An experiment in a real browser: Debian's Chromium through Playwright against a real stack (daphne, a Celery
worker, SQLite, the embedded broker), the scripted LLM over HTTP.

The worker has a simulated GPU (tests/support/simulated_gpu.py), so the two runs (vadd in BF16 and FP32)
finish with real turns: the scripted Coder's BF16 kernel is 2.5× faster than the baseline at every size, its
FP32 kernel 0.9× (correct but slower). So with all precisions fast_1 is 1 of 2 (50 %), with FP32 alone 0 %.
"""

import csv
import io
import re
from pathlib import Path

import pytest

from testing.scripted_llm import ScriptedLLM
from tests.support.scripted_eval import COMMAND, PLAN, kernel
from tests.support.specs import write_task
from tests.support.stack import make_stack, signed_in_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SCRIPT = [
    {"agent": "planner", "content": PLAN, "repeat": 100},
    {"agent": "coder", "match": {"user_contains": "vadd_bf16"}, "content": kernel("ok 2.5"), "repeat": 100},
    {"agent": "coder", "content": kernel("ok 0.9"), "repeat": 100},
    {"agent": "compiler", "content": COMMAND, "repeat": 100},
]


@pytest.fixture(scope="module")
def llm():
    with ScriptedLLM(SCRIPT) as server:
        yield server


@pytest.fixture(scope="module")
def stack(tmp_path_factory, llm, chromium):
    base = tmp_path_factory.mktemp("stack-experiment-browser")
    write_task(base / "tasks", "vadd")
    stack = make_stack(base, base / "tasks")
    stack.manage("shell", "-c", "from apps.llm.models import LLMEndpoint; LLMEndpoint.objects.create("
                 f"name='scripted', base_url='{llm.base_url}', model_names=['scripted'])")
    stack.start(worker_args=("--include", "tests.support.simulated_gpu"))
    yield stack
    stack.stop()


@pytest.fixture
def page(browser, stack):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = signed_in_page(context, stack)
    errors = page.js_errors
    yield page
    context.close()
    assert errors == [], f"JavaScript errors: {errors}"


def _download(page, selector: str) -> tuple[str, bytes]:
    with page.expect_download() as info:
        page.click(selector)
    download = info.value
    return download.suggested_filename, Path(download.path()).read_bytes()


def test_launch_watch_switch_precision_and_download_csv(page, stack, shots):
    page.click("nav >> text=Experiments")
    page.wait_for_url(re.compile(r".*/experiments/$"))
    page.click("text=New experiment")
    page.fill("input[name=name]", "Full pipeline \"R1\" & D0 <fp32, bf16>")
    page.select_option("select[name=suite]", "testsuite")
    page.select_option("select[name=endpoint]", label="scripted")
    page.fill("input[name=model]", "scripted")
    page.fill("input[name=rounds]", "1")
    page.fill("input[name=debug_rounds]", "0")
    page.select_option("select[name=profile_mode]", "none")
    page.click("form.experiment-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/experiments/\d+/$"))
    experiment_id = int(page.url.rstrip("/").split("/")[-1])
    assert "Full pipeline \"R1\" & D0 <fp32, bf16>" in page.locator("h1").inner_text()  # shown as text, not markup

    # live: the progress fragment is polled until both runs end, then the page reloads with the analyses
    page.wait_for_selector("#experiment-progress[data-active='0']", timeout=90_000)
    page.wait_for_selector("#fact-trials", timeout=10_000)
    assert page.locator("#experiment-progress .progress-counts [data-status=succeeded]").inner_text() == "2 succeeded"
    assert page.locator("#fact-trials").inner_text() == "2"
    assert page.locator("#fact-fast1").inner_text() == "50.0%"
    # the interactive charts replaced the server-drawn SVG and offer PNG downloads
    page.wait_for_selector("#chart-success_curve canvas")
    assert page.locator("#chart-fast_p canvas").count() == 1 and page.locator("#chart-operators canvas").count() == 1
    page.screenshot(path=str(shots / "experiment.png"), full_page=True,
                    clip={"x": 0, "y": 0, "width": 1400, "height": 1130})
    name, png = _download(page, "#chart-fast_p button[data-format=png]")
    assert name == f"experiment-{experiment_id}-fast_p.png" and png.startswith(b"\x89PNG\r\n\x1a\n")

    # switch to FP32: the URL carries it, every analysis is FP32 only
    page.click(".precision-switch a[data-precision=fp32]")
    page.wait_for_url(re.compile(r".*\?precision=fp32$"))
    assert page.locator(".precision-switch a.active").inner_text() == "FP32"
    assert page.locator("#fact-trials").inner_text() == "1"
    assert page.locator("#fact-fast1").inner_text() == "0.0%"
    assert page.locator("#table-success_curve tr[data-series]").evaluate_all(
        "rows => rows.map(r => r.dataset.series)") == ["fp32"]

    name, text = _download(page, "#table-fast_p a[data-format=csv]")
    assert name == f"experiment-{experiment_id}-fast_p-fp32.csv"
    rows = list(csv.reader(io.StringIO(text.decode())))
    assert rows == [["p", "fast", "trials", "fast_p"], ["0", "1", "1", "1.0"], ["0.5", "1", "1", "1.0"],
                    ["0.8", "1", "1", "1.0"], ["1", "0", "1", "0.0"], ["1.5", "0", "1", "0.0"],
                    ["2", "0", "1", "0.0"]]
    name, text = _download(page, "#table-operators a[data-format=csv]")
    operators = list(csv.DictReader(io.StringIO(text.decode())))
    assert [(r["operator"], r["precision"], r["best_P"]) for r in operators] == [("vadd", "fp32", "0.9")]
    name, svg = _download(page, "#chart-success_curve a.svg-download")
    assert name == f"experiment-{experiment_id}-success_curve-fp32.svg" and svg.startswith(b"<svg")

    # BF16 alone: its one trial beats the baseline; the list offers the experiment for comparison
    page.click(".precision-switch a[data-precision=bf16]")
    page.wait_for_url(re.compile(r".*\?precision=bf16$"))
    assert page.locator("#fact-fast1").inner_text() == "100.0%"
    page.goto(f"{stack.url}/experiments/")
    assert page.locator(f"input[name=ids][value='{experiment_id}']").count() == 1
