"""The esbuild bundle in static/dist/ (docs/frontend.md), driven in Debian's Chromium through Playwright.

The page is a blank one with the built scripts injected: no Django server, so this stays fast.
"""

import base64
import json
import os
import shutil
import urllib.parse
from pathlib import Path

import pytest
from django.utils.html import json_script

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "static" / "dist"
BUNDLE = ["kw-htmx.js", "kw-editor.js", "kw-charts.js", "uPlot.min.css"]

CODE = (
    "__global__ void scale(float* a, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) a[i] *= 2.0f;\n"
    "}\n"
)
A_SIDE = "int a = 1;\nint b = 2;\nint c = 3;\n"
B_SIDE = "int a = 1;\nint b = 20;\nint c = 3;\n"
SCORE = {
    "ylabel": "P",
    "turns": [
        {"label": "1.0", "score": 1.2, "best": 1.2, "valid": True},
        {"label": "1.1", "score": None, "best": 1.2, "valid": False},
        {"label": "2.0", "score": 1.5, "best": 1.5, "valid": True},
        {"label": "3.0", "score": 1.4, "best": 1.5, "valid": True},
    ],
}
STRIPS = {
    "sizes": ["n=1024", "n=1048576"],
    "turns": [
        {"label": "1.0", "speedups": [1.1, 0.9], "failed": [False, False]},
        {"label": "2.0", "speedups": [1.3, None], "failed": [False, True]},
        {"label": "3.0", "speedups": [1.6, 1.2], "failed": [False, False]},
    ],
}
LINES = {
    "x": [1, 10, 100, 1000],
    "xlabel": "N",
    "ylabel": "GB/s",
    "logx": True,
    "series": [{"label": "ours", "values": [1, 5, 40, 80]}, {"label": "torch", "values": [2, 6, 30, None]}],
}

OPERATORS = {
    "labels": ["vadd fp32", "relu bf16", "gemm fp32"],
    "ylabel": "P",
    "series": [{"label": "best candidate P", "values": [2.5, None, 8.0]},
               {"label": "library reference P", "values": [3.0, 1.2, None]}],
}


PAGE = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>bundle</title></head>
<body style="width: 800px">
<form id="f"><label for="code">Kernel source</label>
<textarea id="code" name="code" rows="8" data-editor="cuda">{CODE}</textarea></form>
<textarea id="ro" data-editor="cuda" data-editor-readonly>int untouched;</textarea>
<div id="merge" data-merge>
  <script type="application/json" data-side="a">{json.dumps(A_SIDE)}</script>
  <script type="application/json" data-side="b">{json.dumps(B_SIDE)}</script>
  <pre id="merge-fallback">server-rendered diff</pre>
</div>
<div id="merge-plain" data-merge>
  {json_script("if (i < n) x = 1;", "plain-a")}{json_script("if (i <= n) x = 1;", "plain-b")}
</div>
<div id="score" data-chart="score" data-source="score-data" data-filename="score"></div>
{json_script(SCORE, "score-data")}
<div id="strips" data-chart="size-strips" data-source="strips-data"></div>
{json_script(STRIPS, "strips-data")}
<div id="lines" data-chart="lines" data-source="lines-data"></div>
{json_script(LINES, "lines-data")}
<div id="operators" data-chart="operators" data-source="operators-data"></div>
{json_script(OPERATORS, "operators-data")}
</body></html>"""


@pytest.fixture(scope="module")
def page():
    missing = [name for name in BUNDLE if not (DIST / name).is_file()]
    if missing:
        pytest.fail(f"static/dist is not built (missing {', '.join(missing)}): run `make static/dist/.built`")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (the .ci/run script installs Debian's chromium)")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(accept_downloads=True, viewport={"width": 1000, "height": 900})
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
        page.set_content(PAGE)
        page.add_style_tag(path=str(DIST / "uPlot.min.css"))
        for name in BUNDLE[:3]:
            page.add_script_tag(path=str(DIST / name))
        page.errors = errors
        yield page
        browser.close()
    assert not errors, errors


def _download_url(page, selector):
    with page.expect_download() as info:
        page.click(selector)
    return info.value.url


@pytest.mark.browser
def test_htmx_is_exposed_as_window_htmx(page):
    assert page.evaluate("typeof window.htmx.process") == "function"
    assert page.evaluate("window.htmx.version").startswith("2.")


@pytest.mark.browser
def test_the_editor_replaces_the_textarea_and_keeps_it_in_sync(page):
    editor = page.locator("#code + .cm-editor")
    assert editor.count() == 1
    assert page.locator("#code").is_hidden()
    assert editor.locator(".cm-lineNumbers .cm-gutterElement", has_text="4").count() == 1
    assert editor.locator(".cm-line span").count() > 3  # C++ tokens are highlighted
    assert editor.locator(".cm-content").get_attribute("aria-label") == "Kernel source"

    editor.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type("// tuned")
    value = page.eval_on_selector("#code", "t => t.value")
    assert value == CODE + "// tuned"
    assert page.evaluate("new FormData(document.getElementById('f')).get('code')") == value
    page.keyboard.press("Control+z")  # history
    assert page.eval_on_selector("#code", "t => t.value") == CODE


@pytest.mark.browser
def test_a_readonly_editor_ignores_typing(page):
    editor = page.locator("#ro + .cm-editor")
    assert editor.count() == 1
    editor.locator(".cm-content").click()
    page.keyboard.type("xyz")
    assert page.eval_on_selector("#ro", "t => t.value") == "int untouched;"
    assert "xyz" not in editor.inner_text()


@pytest.mark.browser
def test_the_merge_view_shows_both_sides_and_marks_the_changed_line(page):
    sides = page.locator("#merge .cm-mergeView .cm-editor")
    assert sides.count() == 2
    assert page.locator("#merge-fallback").count() == 0
    assert "int b = 2;" in sides.nth(0).inner_text()
    assert "int b = 20;" in sides.nth(1).inner_text()
    for side in (sides.nth(0), sides.nth(1)):
        changed = side.locator(".cm-changedLine")
        assert changed.count() == 1
        assert "int b" in changed.inner_text()


@pytest.mark.browser
def test_the_merge_view_also_reads_two_plain_json_script_tags(page):
    sides = page.locator("#merge-plain .cm-mergeView .cm-content")
    assert sides.all_inner_texts() == ["if (i < n) x = 1;", "if (i <= n) x = 1;"]


@pytest.mark.browser
def test_charts_render_canvases(page):
    assert page.locator("#score canvas").count() == 1
    assert page.locator("#strips canvas").count() == 2
    assert page.locator("#strips .u-title").all_inner_texts() == ["n=1024", "n=1048576"]
    assert page.locator("#lines canvas").count() == 1


@pytest.mark.browser
def test_charts_follow_their_container_width(page):
    before = page.eval_on_selector("#lines canvas", "c => c.getBoundingClientRect().width")
    page.eval_on_selector("#lines", "el => { el.style.width = '420px'; }")
    page.wait_for_function("document.querySelector('#lines canvas').getBoundingClientRect().width === 420")
    assert before > 420


@pytest.mark.browser
def test_png_button_gives_a_png_data_url(page):
    url = _download_url(page, "#score button[data-format=png]")
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert _download_url(page, "#strips button[data-format=png]").startswith("data:image/png")


@pytest.mark.browser
def test_svg_button_gives_an_svg_of_the_same_data(page):
    url = _download_url(page, "#score button[data-format=svg]")
    assert url.startswith("data:image/svg+xml")
    svg = urllib.parse.unquote(url.split(",", 1)[1])
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "<polyline" in svg and svg.count("<circle") == 3  # the three valid scores
    assert "invalid" in svg and "2.0" in svg  # the invalid-turn marker in the legend, the turn labels on the x axis

    strips = urllib.parse.unquote(_download_url(page, "#strips button[data-format=svg]").split(",", 1)[1])
    assert "n=1024" in strips and "n=1048576" in strips
    assert 'stroke-dasharray="5 4"' in strips  # the y=1 reference line
    assert "#cf222e" in strips  # the failed entry's red x


@pytest.mark.browser
def test_the_operators_chart_puts_each_task_on_the_x_axis_beside_a_1x_line(page):
    assert page.locator("#operators canvas").count() == 1
    markup = urllib.parse.unquote(_download_url(page, "#operators button[data-format=svg]").split(",", 1)[1])
    assert "vadd fp32" in markup and "gemm fp32" in markup and "library reference P" in markup
    assert markup.count("<circle") == 4  # the four known values; None leaves a gap
    assert 'stroke-dasharray="5 4"' in markup  # the 1× line


@pytest.mark.browser
def test_enhancing_is_idempotent_and_follows_htmx_swaps(page):
    page.evaluate("KWEditor.enhance(); KWCharts.renderAll()")
    assert page.locator(".cm-editor").count() == 6  # two textareas + two merge views of two sides
    assert page.locator("#score canvas").count() == 1
    page.evaluate(
        """() => {
        const div = document.createElement('div');
        div.innerHTML = '<textarea id="swapped" data-editor="cuda">int y;</textarea>';
        document.body.append(div);
        document.body.dispatchEvent(new CustomEvent('htmx:afterSwap', {bubbles: true, detail: {elt: div}}));
    }"""
    )
    assert page.locator("#swapped + .cm-editor").count() == 1
