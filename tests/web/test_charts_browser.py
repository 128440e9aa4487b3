"""Source <-> assembly linking and the performance charts in a real browser: Debian's Chromium through Playwright
against a real stack (daphne, SQLite), with the demo trajectories (real H100/H200 runs) and the demo experiment.

The softmax demo run's best turn gets the PTX and SASS that a real `nvcc -arch=sm_90 -lineinfo` build of its
own code produces here (the stored demo predates line-mapped listings). Screenshots at 1440×900 and
1920×1080 go to a temp dir, or to docs/screenshots/ with UPDATE_SCREENSHOTS=1.
"""

import json
import re
import shutil
import subprocess

import pytest

from tests.support.stack import ROOT, make_stack, signed_in_page
from worker.engine import assembly

pytestmark = [pytest.mark.browser, pytest.mark.slow]
DEMO = ROOT / "demo" / "trajectories"
SIZES = [(1440, 900), (1920, 1080)]


def _with_listing(trajectory: dict, work) -> dict:
    """The trajectory with its best turn's real sm_90 PTX/SASS (line-mapped) in its compile result."""
    cuobjdump, nvdisasm = assembly.tools()
    if not (cuobjdump and nvdisasm and shutil.which("nvcc")):
        pytest.fail("nvcc, cuobjdump and nvdisasm are needed: `make .cuda-libs/.ready` fetches the last two")
    best = max((t for t in trajectory["turns"] if t["valid"]), key=lambda t: t["score"])
    (work / "candidate.cu").write_text(best["code"])
    subprocess.run(["nvcc", "-c", "-O3", "-arch=sm_90", "-lineinfo", "candidate.cu", "-o", "candidate.o"], cwd=work,
                   check=True, capture_output=True)
    listing = assembly.dump(work / "candidate.o")
    best["evaluation"]["compile"].update(ptx=listing.ptx, sass=listing.sass, assembly_note=listing.note)
    return trajectory


@pytest.fixture(scope="module")
def stack(tmp_path_factory, chromium):
    base = tmp_path_factory.mktemp("stack-charts")
    # As `make run` does: the demo's library references, measured on an H100 (docs/experiments.md).
    stack = make_stack(base, ROOT / "tasks", LIBRARY_REFERENCES_FILE=str(ROOT / "demo" / "h100-library.json"))
    softmax = _with_listing(json.loads((DEMO / "softmax_fp32_trajectory.json").read_text()), base)
    (base / "softmax.json").write_text(json.dumps(softmax))
    others = sorted(str(p) for p in DEMO.glob("*.json") if not p.name.startswith("softmax"))
    stack.manage("import_trajectory", str(base / "softmax.json"), *others, "--public")
    stack.manage("import_experiment", str(ROOT / "demo" / "experiments" / "h100-12-tasks"), "--owner", "tester")
    stack.start(worker=False)
    yield stack
    stack.stop()


@pytest.fixture(params=SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def page(request, browser, stack):
    width, height = request.param
    context = browser.new_context(viewport={"width": width, "height": height})
    page = signed_in_page(context, stack)
    errors = page.js_errors
    page.size = f"{width}x{height}"
    yield page
    context.close()
    assert errors == [], f"JavaScript errors: {errors}"


def _run_id(stack, operator: str) -> int:
    return stack.query("SELECT r.id FROM runs_run r JOIN catalog_task t ON r.task_id = t.id WHERE t.operator = ? "
                       "ORDER BY r.id LIMIT 1", operator)[0][0]


def _svg(page, selector: str) -> str:
    return page.evaluate("sel => window.KWCharts.svg(document.querySelector(sel))", selector)


def test_hovering_a_source_line_highlights_its_sass_and_back(page, stack, shots):
    page.goto(f"{stack.url}/runs/{_run_id(stack, 'softmax')}/")
    page.click(".tab-bar a[data-tab='asm']")
    view = page.locator("[data-asm-view]")
    view.wait_for()
    assert "registers" in page.locator(".asm-resources").inner_text()
    # a source line with instructions: hovering it highlights exactly the SASS rows of that line
    source_row = page.locator(".asm-source tr[data-src]").nth(8)
    line = source_row.get_attribute("data-src")
    source_row.hover()
    sass_rows = page.locator(f".listing-sass tr[data-src='{line}']")
    assert sass_rows.count() > 0
    assert page.locator(".listing-sass tr.hl").count() == sass_rows.count()
    assert sass_rows.first.evaluate("tr => tr.classList.contains('hl')")
    # and back: hovering an instruction highlights its source line
    instruction = page.locator(".listing-sass tr[data-src]").nth(40)
    back = instruction.get_attribute("data-src")
    instruction.hover()
    assert page.locator(".asm-source tr.hl").evaluate_all("rows => rows.map(r => r.dataset.src)") == [back]
    # a click pins a line and scrolls the SASS pane to its first instruction
    source_row.click()
    assert page.locator(".listing-sass tr.pinned").count() == sass_rows.count()
    pane = page.locator(".asm-target")
    top = pane.evaluate("p => p.scrollTop")
    first = sass_rows.first.evaluate("tr => tr.offsetTop")
    assert top <= first <= top + pane.evaluate("p => p.clientHeight")
    # predicates are highlighted as guards, not errors; PTX switches in place of the SASS
    assert page.locator(".listing-sass span.kp").count() > 0 and page.locator(".listing-sass .err").count() == 0
    page.locator(".asm-pane-title").first.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / f"viewer-assembly-{page.size}.png"))
    page.click("[data-asm-show='ptx']")
    assert page.locator("table[data-asm='ptx']").is_visible()
    assert not page.locator("table[data-asm='sass']").is_visible()
    page.locator(f".asm-source tr[data-src='{line}']").hover()
    assert page.locator(".listing-ptx tr.hl").count() > 0


def test_the_speedup_chart_is_one_log_scale_chart_with_titled_axes_and_valued_legends(page, stack, shots):
    page.goto(f"{stack.url}/runs/{_run_id(stack, 'softmax')}/")
    chart = page.locator("[data-chart='speedup']")
    chart.locator("canvas").first.wait_for()
    assert chart.locator("canvas").count() == 1  # one chart, not a stack of strips
    svg = _svg(page, "[data-chart='speedup']")
    assert ">turn</text>" in svg and "speedup over baseline (×, log scale)" in svg
    assert "1.00×" in svg  # log ticks are labelled as speedups
    legend = chart.locator(".u-legend").inner_text()
    assert "--" not in legend and "(best)" in legend and "×" in legend
    assert "N=16" in legend  # a line per size
    png = page.evaluate("sel => window.KWCharts.png(document.querySelector(sel))", "[data-chart='speedup']")
    assert png.startswith("data:image/png;base64,") and len(png) > 5000  # 16 sizes' legend wraps inside
    score = _svg(page, "[data-chart='score']")
    assert "P (weighted speedup)" in score and ">turn</text>" in score
    page.locator("#run-charts").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / f"viewer-speedup-{page.size}.png"))


def test_the_roofline_of_a_turn_has_roofs_points_and_axis_titles(page, stack, shots):
    page.goto(f"{stack.url}/runs/{_run_id(stack, 'matrix_mul')}/")
    page.click(".tab-bar a[data-tab='results']")
    chart = page.locator("[data-chart='roofline']")
    chart.locator("canvas").first.wait_for()
    svg = _svg(page, "[data-chart='roofline']")
    assert "arithmetic intensity (FLOP/byte, log scale)" in svg and "achieved FLOP/s (log scale)" in svg
    assert "roof: HBM3e 4800 GB/s · FP32 67 TFLOP/s · ridge at" in svg and "% of peak" in svg
    assert "--" not in chart.locator(".u-legend").inner_text()
    table = page.locator(".perf-table").inner_text()
    assert "% of peak BW" in table and "FLOP/B" in table
    page.locator("#turn-perf").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / f"viewer-roofline-{page.size}.png"))


def test_missing_performance_data_is_said_in_words(page, stack):
    page.goto(f"{stack.url}/runs/{_run_id(stack, 'vector_add_make')}/?turn=0.0")
    page.click(".tab-bar a[data-tab='results']")
    assert "No bytes/FLOPs model for this task" in page.locator("#turn-perf").inner_text()


def test_the_per_operator_chart_rotates_or_thins_its_labels(page, stack, shots):
    exp = stack.query("SELECT id FROM experiments_experiment ORDER BY id LIMIT 1")[0][0]
    page.goto(f"{stack.url}/experiments/{exp}/")
    chart = page.locator("[data-chart='operators']")
    chart.locator("canvas").first.wait_for()
    svg = _svg(page, "[data-chart='operators']")
    labels = re.findall(r'<text transform="translate\(([\d.]+) [\d.]+\) rotate\(-45\)"', svg)
    flat = re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle">([^<]+)</text>', svg)
    # either rotated, or laid flat with room for each label (about 6.5 px per character)
    if not labels:
        xs = sorted((float(x), len(t)) for x, t in flat)
        assert all(b[0] - a[0] >= (a[1] + b[1]) * 3.25 for a, b in zip(xs, xs[1:], strict=False))
    assert ">operator</text>" in svg
    chart.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / f"experiment-operators-{page.size}.png"))


def test_every_operator_of_the_demo_experiment_has_its_measured_library_reference(page, stack, shots):
    exp = stack.query("SELECT id FROM experiments_experiment ORDER BY id LIMIT 1")[0][0]
    rows = page.request.get(f"{stack.url}/experiments/{exp}/export/library_comparison.json").json()["rows"]
    operators = {r["operator"] for r in rows if r["reference_speedups"]}
    assert operators == {"RELU", "dot_product", "matrix_transpose", "prefix_sum", "rms_norm", "vector_add"}, rows
    page.goto(f"{stack.url}/experiments/{exp}/")
    page.locator("[data-chart='operators'] canvas").first.wait_for()
    svg = _svg(page, "[data-chart='operators']")
    assert "library reference P" in svg
    page.locator("#table-library_comparison").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / f"experiment-library-{page.size}.png"))
