"""The code view and the manual-turn editor in a real browser: Debian's Chromium through Playwright against a
real stack (daphne, a Celery worker with the simulated GPU, SQLite, the embedded broker).

The code view is measured, not eyeballed: columns per pane from CodeMirror's own character width, wrapped
lines from each line's height. Screenshots go to a temp dir, or to docs/screenshots/ with UPDATE_SCREENSHOTS=1.
"""

import re
import shutil

import pytest

from tests.support.specs import write_task
from tests.support.stack import ROOT, make_stack, signed_in_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Per pane of a merge view (or the single pane): columns that fit beside the gutters, lines taller than one
# line box (a wrap), whether the content is laid out without wrapping at all.
MEASURE = """(selector) => {
  const host = document.querySelector(selector || "#diff");
  const views = host.kwMerge ? [host.kwMerge.a, host.kwMerge.b] : [host.kwView];
  return views.map((v) => {
    const gutters = v.dom.querySelector(".cm-gutters");
    const lines = [...v.contentDOM.querySelectorAll(".cm-line")];
    return {
      columns: (v.scrollDOM.clientWidth - (gutters ? gutters.offsetWidth : 0)) / v.defaultCharacterWidth,
      wrapped: lines.filter((l) => l.getBoundingClientRect().height > v.defaultLineHeight * 1.5).length,
      lines: lines.length,
      whiteSpace: getComputedStyle(v.contentDOM).whiteSpace,
      lineWrapping: v.lineWrapping,
    };
  });
}"""
CSP_WATCH = ("window.__csp = []; document.addEventListener('securitypolicyviolation', "
             "(e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")


@pytest.fixture(scope="module")
def stack(tmp_path_factory, chromium):
    base = tmp_path_factory.mktemp("stack-codeview")
    shutil.copytree(ROOT / "tasks", base / "tasks")  # the real library, for the recorded demo runs ...
    write_task(base / "tasks", "vadd")  # ... and a small task for manual turns on the simulated GPU
    stack = make_stack(base, base / "tasks")
    demo = sorted(str(p) for p in (ROOT / "demo" / "trajectories").glob("*.json"))
    stack.manage("import_trajectory", *demo, "--public")
    stack.start(worker_args=("--include", "tests.support.simulated_gpu"))
    yield stack
    stack.stop()


def _login(context, stack):
    page = signed_in_page(context, stack, init_script=CSP_WATCH)
    return page, page.js_errors


@pytest.fixture
def open_page(browser, stack):
    """open_page(width, height) -> a logged-in page; after the test: no JavaScript error, no CSP violation."""
    opened = []

    def make(width=1440, height=900):
        context = browser.new_context(viewport={"width": width, "height": height})
        page, errors = _login(context, stack)
        opened.append((context, page, errors))
        return page

    yield make
    for context, page, errors in opened:
        violations = page.evaluate("window.__csp || []")
        context.close()
        assert errors == [], f"JavaScript errors: {errors}"
        assert violations == [], f"Content-Security-Policy violations: {violations}"


def _run_of(stack, operator: str) -> int:
    return stack.query("SELECT r.id FROM runs_run r JOIN catalog_task t ON r.task_id=t.id "
                       "WHERE t.operator=? AND r.origin LIKE 'import:%'", operator)[0][0]


def _vadd_id(stack) -> int:
    return stack.query("SELECT id FROM catalog_task WHERE operator='vadd' AND precision='fp32'")[0][0]


def _merge(page, against: str = "baseline"):
    page.wait_for_selector(f"#diff[data-against='{against}'] .cm-mergeView .cm-merge-b .cm-line")
    return page.locator("#diff")


@pytest.mark.parametrize("size", [(1440, 900), (1280, 800), (1920, 1080)])
def test_the_merge_view_has_two_panes_of_72_columns_and_no_wrapped_line(open_page, stack, size):
    page = open_page(*size)
    page.goto(f"{stack.url}/runs/{_run_of(stack, 'softmax')}/")
    _merge(page)
    panes = page.evaluate(MEASURE)
    assert len(panes) == 2
    for pane in panes:
        assert pane["wrapped"] == 0 and pane["lines"] > 10, pane
        assert pane["whiteSpace"] == "pre" and pane["lineWrapping"] is False, pane
        if size[0] >= 1440:
            assert pane["columns"] >= 72, (size, pane)
        else:
            assert pane["columns"] >= 60, (size, pane)
    # as tall as the window allows, never taller
    box = page.locator("#diff .cm-mergeView").bounding_box()
    assert box["height"] <= size[1]


def test_the_diff_against_switch_reloads_the_merge_view_against_parent_and_best(open_page, stack):
    page = open_page()
    page.goto(f"{stack.url}/runs/{_run_of(stack, 'softmax')}/?turn=1.1")
    _merge(page)
    assert "baseline" in page.locator("#diff .kw-cv-title-a").inner_text()
    page.click(".diff-modes a[data-against='parent']")
    _merge(page, "parent")
    assert page.locator("#diff .kw-cv-title-a").inner_text().startswith("parent · turn 1.0")
    assert page.locator("#diff .cm-merge-b .cm-changedLine").count() > 0
    # the best turn against itself: one pane with the turn's code
    page.click(".diff-modes a[data-against='best']")
    page.wait_for_selector("#diff[data-against='best'] .kw-cv-body > .cm-editor .cm-line")
    assert page.locator("#diff .cm-mergeView").count() == 0


def test_unchanged_regions_collapse_with_a_count_and_expand(open_page, stack):
    page = open_page()
    page.goto(f"{stack.url}/runs/{_run_of(stack, 'softmax')}/?turn=1.1&against=parent")
    diff = _merge(page, "parent")
    collapsed = diff.locator(".cm-collapsedLines")
    assert collapsed.count() > 0
    assert re.fullmatch(r"\d+ unchanged lines", collapsed.first.inner_text().strip())
    page.click("#diff .kw-cv-unchanged")
    page.wait_for_selector("#diff[data-collapsed='false']")
    assert diff.locator(".cm-collapsedLines").count() == 0
    page.click("#diff .kw-cv-unchanged")
    page.wait_for_selector("#diff[data-collapsed='true'] .cm-collapsedLines")


def test_full_screen_fills_the_window_and_escape_leaves_it(open_page, stack):
    page = open_page()
    page.goto(f"{stack.url}/runs/{_run_of(stack, 'softmax')}/")
    _merge(page)
    page.click("#diff .kw-cv-fullscreen")
    page.wait_for_selector("#diff.kw-cv-full")
    box = page.locator("#diff").bounding_box()
    assert (box["x"], box["y"], box["width"], box["height"]) == (0, 0, 1440, 900)
    assert page.locator("#diff .kw-cv-fullscreen").get_attribute("aria-pressed") == "true"
    page.keyboard.press("Escape")
    page.wait_for_selector("#diff:not(.kw-cv-full)")
    assert page.locator("#diff").bounding_box()["width"] < 1440


def test_both_panes_scroll_together_and_the_splitter_resizes_them(open_page, stack):
    page = open_page(1440, 700)
    page.goto(f"{stack.url}/runs/{_run_of(stack, 'softmax')}/?turn=1.1&against=parent")
    _merge(page, "parent")
    page.click("#diff .kw-cv-unchanged")  # every line: taller than the window
    page.wait_for_selector("#diff[data-collapsed='false']")
    scroller = page.locator("#diff .cm-mergeView")
    assert scroller.evaluate("el => el.scrollHeight > el.clientHeight + 100")
    scroller.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_timeout(300)
    # the last line of each side is on screen at once: one scroll moves both panes
    ends = page.evaluate("""() => {
      const m = document.getElementById('diff').kwMerge, box = m.dom.getBoundingClientRect();
      return [m.a, m.b].map((v) => { const c = v.coordsAtPos(v.state.doc.length);
        return !!c && c.top >= box.top - 1 && c.bottom <= box.bottom + 1; });
    }""")
    assert ends == [True, True]
    # splitter: drag to a third, then keyboard
    split = page.locator("#diff .kw-cv-split")
    editors = page.locator("#diff .cm-mergeViewEditors").bounding_box()
    s, view = split.bounding_box(), scroller.bounding_box()
    y = view["y"] + view["height"] / 2  # a point of the splitter that is on screen
    page.mouse.move(s["x"] + s["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(editors["x"] + editors["width"] / 3, y, steps=5)
    page.mouse.up()
    left, right = (b["width"] for b in page.locator("#diff .cm-mergeViewEditor").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().toJSON())"))
    assert left < right * 0.6, (left, right)
    before = int(split.get_attribute("aria-valuenow"))
    split.focus()
    page.keyboard.press("ArrowRight")
    assert int(split.get_attribute("aria-valuenow")) == before + 5


def test_without_javascript_the_two_panes_never_wrap_and_rows_line_up(browser, stack):
    context = browser.new_context(viewport={"width": 1440, "height": 900}, java_script_enabled=False)
    page, _ = _login(context, stack)
    page.goto(f"{stack.url}/runs/{_run_of(stack, 'softmax')}/")
    panes = page.locator("#diff .kw-cv-static .kw-cv-pane")
    assert panes.count() == 2
    rows = [panes.nth(i).locator("tbody tr").evaluate_all(
        "els => els.map(e => [Math.round(e.getBoundingClientRect().top), e.getBoundingClientRect().height])")
        for i in range(2)]
    assert rows[0] == rows[1]  # same rows at the same heights: no line wrapped on either side
    assert max(height for _, height in rows[0]) < 18 * 1.5  # one line box per row
    assert page.locator("#diff td.src code").first.evaluate("e => getComputedStyle(e).whiteSpace") == "pre"
    context.close()


def test_the_showcase_operator_page_uses_the_merge_view(open_page, stack, shots):
    for width, height in ((1440, 900), (1920, 1080)):
        page = open_page(width, height)
        page.goto(f"{stack.url}/showcase/")
        page.click("a[href*='/showcase/'][href*='softmax']")
        page.wait_for_selector(".sc-diff-view .cm-mergeView .cm-merge-b .cm-line")
        panes = page.evaluate(MEASURE, ".sc-diff-view")
        assert len(panes) == 2 and all(p["wrapped"] == 0 and p["whiteSpace"] == "pre" for p in panes), panes
        page.screenshot(path=str(shots / f"showcase-operator-{width}.png"), full_page=True)


MARKER_ON_LINE_5 = """() => {
  const centre = e => { const r = e.getBoundingClientRect(); return r.top + r.height / 2; };
  const marker = document.querySelector('#diff .cm-lint-marker-error');
  const line5 = [...document.querySelectorAll('#diff .cm-lineNumbers .cm-gutterElement')]
    .find(e => e.textContent.trim() === '5');
  return !!(marker && line5) && Math.abs(centre(marker) - centre(line5)) < 4;
}"""


def test_a_manual_turn_from_the_editor_is_followed_to_its_verdict_with_error_markers(open_page, stack, shots):
    page = open_page()
    page.goto(f"{stack.url}/runs/evaluate/{_vadd_id(stack)}/")
    # the baseline and the signature beside the editor; help text placeholders shown as written
    page.wait_for_selector(".manual-side .cm-editor .cm-line")
    assert "vadd" in page.locator(".manual-side .cm-content").inner_text()
    assert "vadd" in page.locator(".manual-side pre.signature").inner_text()
    assert "<entry>" in page.locator(".manual-main .helptext").first.inner_text()
    source = page.evaluate("document.querySelector('.manual-side textarea').value")
    code = "// outcome: compile_error 5\n" + source
    page.locator(".manual-main .cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.evaluate("c => { const v = document.querySelector('.manual-main textarea').kwEditor; "
                  "v.dispatch({changes: {from: 0, to: v.state.doc.length, insert: c}}); }", code)
    assert page.locator(".manual-main textarea[name=code]").input_value() == code
    page.click("form.manual-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    page.evaluate("window.__sameDocument = true")
    # the status follows the turn without a reload, to its verdict
    page.wait_for_selector(".turn-toolbar[data-verdict='compile_error']", timeout=60_000)
    assert page.evaluate("window.__sameDocument === true")
    assert page.locator("#turn-status").count() == 0
    # the error on line 5: a lint marker beside line number 5, and the list without JavaScript's help
    # The merge view aligns its panes with spacers a frame or two after mounting, moving every line: both
    # centres are read in one snapshot, until they settle (a marker on any other line never does).
    page.wait_for_selector("#diff .cm-lint-marker-error")
    page.wait_for_function(MARKER_ON_LINE_5, timeout=10_000)
    assert "line 5" in page.locator(".compile-errors").inner_text()
    # edit it as a manual turn: the editor shows the same marker; the fixed turn is followed to "ok"
    page.click(".tab-bar a[data-tab='edit']")
    page.wait_for_selector("#tab-edit .manual-main .cm-lint-marker-error")
    page.screenshot(path=str(shots / "manual-editor-error-1440.png"), full_page=True)
    page.evaluate("""() => { const v = document.querySelector('#tab-edit .manual-main textarea').kwEditor;
      const first = v.state.doc.line(1);
      v.dispatch({changes: {from: first.from, to: first.to, insert: '// outcome: ok 2.0'}}); }""")
    page.click("#tab-edit button[type=submit]")
    page.wait_for_url(re.compile(r".*\?turn=2\.0$"))
    page.evaluate("window.__sameDocument = true")
    page.wait_for_selector(".turn-toolbar[data-selected='2.0'][data-verdict='ok']", timeout=60_000)
    assert page.evaluate("window.__sameDocument === true")
    assert page.locator(".turn-toolbar .verdict").inner_text() == "ok"


def test_screenshots_of_the_code_view(open_page, stack, shots):
    for width, height in ((1440, 900), (1920, 1080)):
        page = open_page(width, height)
        page.goto(f"{stack.url}/runs/{_run_of(stack, 'softmax')}/")
        _merge(page)
        page.screenshot(path=str(shots / f"viewer-code-{width}.png"))
        assert (shots / f"viewer-code-{width}.png").stat().st_size > 10_000


def test_the_static_showcase_export_opens_the_merge_view_from_the_file_system(browser, stack, tmp_path):
    out = tmp_path / "site"
    stack.manage("export_showcase", str(out))
    assert (out / "static" / "dist" / "kw-editor.js").is_file() and (out / "static" / "css" / "codeview.css").is_file()
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto((out / "mskernelbench--softmax--fp32.html").as_uri())
    page.wait_for_selector(".sc-diff-view .cm-mergeView .cm-merge-b .cm-line")
    assert "softmax_kernel_optimized" in page.locator(".sc-diff-view .cm-merge-b").inner_text()
    context.close()
    assert errors == []
