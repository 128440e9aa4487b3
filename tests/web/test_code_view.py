"""The code view without JavaScript, the compile-error parser and the manual-turn editor's server side.

The browser half (merge view, splitter, full screen, live status, lint markers) is
tests/web/test_code_view_browser.py."""

import json
import re
import shutil
from html import unescape
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.template import Context, Template
from django.urls import reverse
from django.utils.html import escape

from apps.catalog.models import Task
from apps.catalog.services import tasks_sync
from apps.runs.codeview import Diagnostic, compile_diagnostics, compile_log_lines, side_by_side
from apps.runs.execution import manual_turn_evaluate
from apps.runs.manual import run_create_manual, turn_submit_manual
from apps.runs.models import Run

pytestmark = pytest.mark.django_db
DEMO = Path(settings.BASE_DIR) / "demo" / "trajectories" / "softmax_fp32_trajectory.json"
CSS = (Path(settings.BASE_DIR) / "static" / "css" / "codeview.css").read_text()
FAST = (Path(settings.BASE_DIR) / "tests" / "gpu_candidates" / "vector_add_fast.cu").read_text()
NVCC_LOG = """candidate.cu(12): error: identifier "cudaSyncX" is undefined
      cudaSyncX();
      ^

candidate.cu(7): warning #177-D: variable "unused" was declared but never referenced
/usr/local/cuda/include/cuda_fp16.hpp(301): error: expected a ";"
candidate.cu(12): error: identifier "cudaSyncX" is undefined
/tmp/build/candidate.cu(30): catastrophic error: cannot open source file "missing.h"
candidate.cu:41:9: error: 'foo' was not declared in this scope
2 errors detected in the compilation of "candidate.cu".
"""


# ------------------------------------------------------------------------------------- the parser


def test_nvcc_errors_and_warnings_are_found_on_their_lines_with_their_message():
    assert compile_diagnostics(NVCC_LOG) == [
        Diagnostic(12, "error", 'identifier "cudaSyncX" is undefined'),  # once, though nvcc repeated it
        Diagnostic(7, "warning", 'variable "unused" was declared but never referenced'),
        Diagnostic(30, "error", 'cannot open source file "missing.h"'),
        Diagnostic(41, "error", "'foo' was not declared in this scope"),
    ]


def test_errors_inside_headers_are_not_pinned_to_the_candidates_lines():
    log = "/usr/local/cuda/include/cuda_fp16.hpp(301): error: expected a \";\"\n"
    assert compile_diagnostics(log) == []
    assert compile_log_lines(log)[0].line is None  # and the log does not link it to line 301 of the code


def test_a_source_name_keeps_only_that_files_messages():
    log = "kernel.cu(3): error: a\nharness.cu(9): error: b\n"
    assert compile_diagnostics(log, source_name="kernel.cu") == [Diagnostic(3, "error", "a")]
    assert compile_diagnostics("") == [] and compile_diagnostics(None) == []


def test_a_log_without_line_references_has_no_diagnostics():
    assert compile_diagnostics("ptxas error   : Entry function uses too much shared data\nnvcc failed\n") == []


# ------------------------------------------------------------------------- the no-JS code view


@pytest.fixture
def demo_run(db, admin_user):
    tasks_sync(settings.TASKS_DIR)
    call_command("import_trajectory", str(DEMO), "--public", stdout=StringIO())
    return Run.objects.get()


def _page(client, run, **params) -> str:
    response = client.get(reverse("runs:detail", args=[run.pk]), params)
    assert response.status_code == 200
    return response.content.decode()


def _merge_sides(html: str) -> dict[str, str]:
    found = re.findall(r'<template data-side="([ab])">(.*?)</template>', html, re.S)
    return {side: unescape(text) for side, text in found}


def test_without_javascript_two_panes_of_equal_rows_that_scroll_instead_of_wrapping(client, user, demo_run):
    client.force_login(user)
    html = _page(client, demo_run, turn="1.1", against="parent")
    static = html[html.index('<div class="kw-cv-static">'):html.index("kw-cv-keys")]
    left, right = static.split('<div class="kw-cv-pane">')[1:]
    assert left.count("<tr") == right.count("<tr") > 5  # every row on both sides: the rows line up
    assert "unchanged lines" in left and "unchanged lines" in right
    assert 'class="replace"' in html and 'id="L44"' in right
    assert "style=" not in static  # the CSP admits no inline style; the no-wrap rules are in codeview.css
    # the rules: code never wraps (pre, no break-all), each pane scrolls sideways, gutters stick and stay narrow
    rule = re.search(r"\.kw-cv-static td \{([^}]*)\}", CSS).group(1)
    assert "white-space:pre;" in rule
    # stronger than app.css's `table.diff td.src code` (pre-wrap, break-all), which the no-JS view used to get
    assert re.search(r"\.kw-cv-static table\.diff td\.src code \{[^}]*white-space:pre;[^}]*word-break:normal", CSS)
    assert re.search(r"\.kw-cv-pane \{[^}]*overflow-x:auto", CSS)
    assert re.search(r"td\.ln, \.kw-cv-static td\.sc-no \{[^}]*position:sticky;[^}]*width:1%", CSS)
    assert "pre-wrap" not in CSS and "break-all" not in CSS


def test_the_merge_view_gets_both_codes_whole_and_escaped(client, user, demo_run):
    client.force_login(user)
    html = _page(client, demo_run, turn="1.1", against="parent")
    turn, parent = demo_run.turns.get(round_index=1, debug_index=1), demo_run.turns.get(round_index=1, debug_index=0)
    assert _merge_sides(html) == {"a": parent.code, "b": turn.code}
    assert re.search(r'id="diff" data-merge data-against="parent" data-language="cuda"', html)
    # a turn alone (no best turn other than itself): one side, b
    alone = _page(client, demo_run, turn="1.1", against="best")
    assert set(_merge_sides(alone)) == {"b"} and 'class="kw-cv-static single"' in alone


def test_code_that_would_close_the_template_stays_inside_it_as_text():
    out = Template('{% load code_view %}{{ code|merge_side:"a" }}').render(Context({"code": "x</template><b>&"}))
    assert out == '<template data-side="a">x&lt;/template&gt;&lt;b&gt;&amp;</template>'


def test_the_showcase_diff_renders_two_no_wrap_panes_and_the_merge_data():
    diff = side_by_side("a\nb\nc\n", "a\nB\nc\n")
    html = Template('{% include "showcase/_showcase_diff.html" %}').render(
        Context({"diff": diff, "left_label": "original", "right_label": "optimized", "links": {"code_css": "/c.css",
                                                                                             "editor_js": "/e.js"}}))
    assert _merge_sides(html) == {"a": "a\nb\nc\n", "b": "a\nB\nc\n"}
    assert html.count('<div class="kw-cv-pane">') == 2 and html.count('class="sc-replace"') == 2
    assert '<link rel="stylesheet" href="/c.css">' in html and '<script src="/e.js" defer></script>' in html
    assert re.search(r"\.kw-cv-static \.sc-diff td\.sc-code \{[^}]*white-space:pre;", CSS)


# ------------------------------------------------------------------------ the manual-turn editor


@pytest.fixture
def vector_add(db):
    tasks_sync(settings.TASKS_DIR)
    return Task.objects.get(operator="vector_add", precision="fp32")


def test_the_evaluate_page_shows_the_editor_the_baseline_and_the_signature_with_escaped_help(client, user,
                                                                                            vector_add):
    client.force_login(user)
    html = client.get(reverse("runs:task_evaluate", args=[vector_add.pk])).content.decode()
    assert 'data-editor="cuda"' in html and 'name="code"' in html
    assert "&lt;entry&gt;_optimized(&lt;same parameters&gt;)" in html  # a placeholder, not an HTML tag
    side = html[html.index('<aside class="manual-side"'):]
    assert str(vector_add.interface).split("(")[0].split()[-1] in side
    assert 'readonly data-editor="cuda" data-editor-readonly' in side
    assert escape(vector_add.baseline_source.strip().splitlines()[0]) in side
    assert "dist/kw-editor.js" in html and "css/codeview.css" in html


def test_a_queued_turn_says_so_and_is_marked_for_the_live_status(client, user, vector_add):
    client.force_login(user)
    run = run_create_manual(owner=user, task=vector_add, code=FAST, dispatch=False)
    html = _page(client, run)
    assert re.search(r'<div class="turn-toolbar" data-selected="1.0" data-pending="1" data-verdict="queued">', html)
    assert 'id="turn-status" role="status"' in html


def test_a_manual_turn_from_the_run_page_opens_on_the_new_turn(client, user, vector_add, monkeypatch,
                                                                django_capture_on_commit_callbacks):
    monkeypatch.setattr("apps.runs.dispatch.enqueue_manual_turn", lambda turn_id: None)
    client.force_login(user)
    run = run_create_manual(owner=user, task=vector_add, code=FAST, dispatch=False)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("runs:manual", args=[run.pk]), {"code": FAST})
    assert response.status_code == 302 and response.url == reverse("runs:detail", args=[run.pk]) + "?turn=2.0"


from tests.web.test_manual_turns import gpu_present  # noqa: E402, F401 - a build error needs no GPU: pretend one

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc is not installed")


@needs_nvcc
@pytest.mark.usefixtures("gpu_present")
def test_a_real_nvcc_error_is_listed_with_its_line_and_marked_in_the_editor(client, user, vector_add):
    code = FAST.replace("cudaDeviceSynchronize", "cudaSyncX")
    line = next(n for n, text in enumerate(code.splitlines(), 1) if "cudaSyncX" in text)
    run = run_create_manual(owner=user, task=vector_add, code=code, dispatch=False)
    manual_turn_evaluate(run.turns.get().pk)
    turn = run.turns.get()
    assert turn.verdict == "compile_error", turn.compile_log
    client.force_login(user)
    html = _page(client, run)
    assert re.search(rf'<a href="#L{line}" data-line="{line}">line {line}</a>: <span class="lvl-error">error</span> '
                     r'identifier &quot;cudaSyncX&quot; is undefined', html)
    attributes = re.findall(r'data-diagnostics="([^"]*)"', html)
    assert len(attributes) == 2  # on the code view and on the editor of the Edit tab
    diagnostics = json.loads(unescape(attributes[0]))
    assert {"line": line, "severity": "error", "message": 'identifier "cudaSyncX" is undefined'} in diagnostics
    assert re.search(rf'<tr class="has-error"><td class="ln" id="L{line}">', html)


@needs_nvcc
@pytest.mark.usefixtures("gpu_present")
def test_a_second_manual_turn_on_an_ended_manual_run_is_evaluated_not_left_queued(user, vector_add):
    run = run_create_manual(owner=user, task=vector_add, code=FAST.replace("cudaDeviceSynchronize", "cudaSyncX"),
                            dispatch=False)
    manual_turn_evaluate(run.turns.get().pk)
    run.refresh_from_db()
    assert run.status == "failed"
    second = turn_submit_manual(run=run, code=FAST.replace("cudaDeviceSynchronize", "cudaSyncY"), dispatch=False)
    manual_turn_evaluate(second.pk)
    second.refresh_from_db()
    assert second.verdict == "compile_error" and "cudaSyncY" in second.compile_log
    assert list(run.events.filter(type="turn.finished").values_list("payload__round", flat=True)) == [1, 2]
