"""The trajectory viewer on a real recorded run (softmax FP32, measured on an H200) and on built runs."""

import re
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from apps.catalog.services import tasks_sync
from apps.runs.models import AgentCall, Run, Turn
from apps.runs.viewer import metric_verdict, parse_label

pytestmark = pytest.mark.django_db
DEMO = Path(settings.BASE_DIR) / "demo" / "trajectories" / "softmax_fp32_trajectory.json"


@pytest.fixture
def demo_run(db, admin_user):
    tasks_sync(settings.TASKS_DIR)
    call_command("import_trajectory", str(DEMO), "--public", stdout=StringIO())
    return Run.objects.get()


def page(client, run, **params):
    response = client.get(reverse("runs:detail", args=[run.pk]), params)
    assert response.status_code == 200
    return response.content.decode()


def test_the_viewer_shows_header_timeline_best_turn_diff_and_every_tab(client, user, demo_run):
    client.force_login(user)
    html = page(client, demo_run)
    assert "NVIDIA H200" in html and f"{demo_run.best_score:.2f}" in html
    labels = re.findall(r'<li class="turn [^"]*" data-label="([\d.]+)"', html)
    assert labels == ["0.0", "1.0", "1.1", "2.0", "2.1"]
    assert re.search(r'class="turn turn-valid sub selected" data-label="1.1"', html)  # best turn selected
    assert "★" in html
    # the best turn against the baseline: changed lines marked on both sides
    assert 'class="replace"' in html  # a rewritten kernel: replaced lines on both sides
    assert 'data-against="baseline"' in html and "_kernel_optimized" in html
    for tab in ("tab-plan", "tab-compile", "tab-results", "tab-profile", "tab-calls"):
        assert f'id="{tab}"' in html
    assert "Registers" in html and "Speedup" in html and "Pinned 0.0" in html
    assert "N=16, C=256" in html  # sizes in the entry point's order, also where jsonb reorders keys
    assert 'data-chart="score"' in html and 'data-chart="speedup"' in html


def test_the_viewer_uses_the_whole_width_of_a_wide_screen_and_other_pages_keep_their_measure(client, user, demo_run):
    client.force_login(user)
    assert '<main class="wide">' in page(client, demo_run)  # two code panes side by side
    assert "<main>" in client.get(reverse("runs:list")).content.decode()


def test_a_compile_error_links_to_the_code_line(client, user, demo_run):
    client.force_login(user)
    html = page(client, demo_run, turn="1.0")
    assert re.search(r'<a href="#L(\d+)" class="log-error" data-line="\1">', html)
    assert "cudaDeviceSynchronise" in html


def test_diff_modes_and_a_turn_without_a_parent_fall_back_to_the_code_alone(client, user, demo_run):
    client.force_login(user)
    parent = page(client, demo_run, turn="1.1", against="parent")
    assert 'data-against="parent"' in parent and "turn 1.0" in parent
    baseline = page(client, demo_run, turn="0.0", against="parent")
    assert 'class="diff highlight single"' in baseline and "no parent turn to compare with" in baseline


def test_unknown_turn_labels_show_the_best_turn(client, user, demo_run):
    client.force_login(user)
    html = page(client, demo_run, turn="9.9")
    assert 'data-selected="1.1"' in html
    assert parse_label("1.2") == (1, 2) and parse_label("x") is None and parse_label("1.2.3") is None


def test_the_panel_and_live_fragments_carry_only_their_parts(client, user, demo_run):
    client.force_login(user)
    panel = client.get(reverse("runs:panel", args=[demo_run.pk]), {"turn": "2.0"}).content.decode()
    assert 'data-selected="2.0"' in panel and "<html" not in panel and 'id="timeline"' not in panel
    live = client.get(reverse("runs:live", args=[demo_run.pk])).content.decode()
    assert live.count('hx-swap-oob="true"') == 3 and 'id="timeline"' in live and 'id="run-charts"' in live


def test_private_runs_are_hidden_from_other_users_on_every_viewer_url(client, user, other_user, make_run):
    run = make_run(user)
    client.force_login(other_user)
    for name in ("runs:detail", "runs:panel", "runs:live"):
        assert client.get(reverse(name, args=[run.pk])).status_code == 404
    client.logout()
    for name in ("runs:detail", "runs:panel", "runs:live"):  # anonymous: the same 404, never a login prompt
        assert client.get(reverse(name, args=[run.pk])).status_code == 404


def test_llm_text_and_code_render_inert(client, user, make_run):
    run = make_run(user)
    evil = '<script>alert(1)</script><img src=x onerror="alert(2)"> [click](javascript:alert(3))'
    turn = Turn.objects.create(run=run, round_index=1, kind="optimize", scheme=evil, code=evil, verdict="ok",
                               valid=True, score=1.5, compile_log=evil)
    AgentCall.objects.create(turn=turn, role="planner", model="m", messages=[{"role": "user", "content": evil}],
                             response=evil)
    client.force_login(user)
    html = page(client, run, turn="1.0")
    assert "<script>alert(1)" not in html and "onerror=\"alert(2)\"" not in html and 'href="javascript:' not in html
    assert "&lt;script&gt;" in html


def test_the_owner_gets_the_manual_turn_editor_prefilled_with_the_turn(client, user, other_user, demo_run):
    demo_run.owner = user
    demo_run.save()
    client.force_login(user)
    html = page(client, demo_run, turn="1.1")
    assert 'id="tab-edit"' in html and 'data-editor="cuda"' in html and "softmax_kernel_optimized" in html
    client.force_login(other_user)
    assert 'id="tab-edit"' not in page(client, demo_run)


def _grow(run: Run, turns: int) -> None:
    best = None
    for i in range(1, turns + 1):
        t = Turn.objects.create(run=run, round_index=i, kind="optimize", code=f"// {i}\n", verdict="ok", valid=True,
                                score=1 + i / 100, results=[{"index": 0, "params": {"N": 1}, "speedup": 1.1}])
        AgentCall.objects.create(turn=t, role="coder", model="m", response="x")
        best = t
    Run.objects.filter(pk=run.pk).update(best_turn=best, best_score=best.score)


def test_the_viewer_query_count_does_not_grow_with_the_number_of_turns(client, user, make_run,
                                                                        django_assert_max_num_queries):
    small, large = make_run(user), make_run(user)
    Turn.objects.create(run=small, round_index=0, kind="baseline", code="// base\n", verdict="ok")
    Turn.objects.create(run=large, round_index=0, kind="baseline", code="// base\n", verdict="ok")
    _grow(small, 5)
    _grow(large, 100)
    client.force_login(user)
    page(client, small)
    with django_assert_max_num_queries(20):
        html = page(client, large)
    assert html.count('class="turn ') == 101


def test_metric_deltas_know_which_direction_is_better():
    assert metric_verdict("Duration", 50.0, 100.0) == (-50.0, "better")
    assert metric_verdict("L2 Hit Rate", 60.0, 80.0) == (-25.0, "worse")
    assert metric_verdict("Registers Per Thread", 40, 32)[1] == "worse"
    assert metric_verdict("Something New", 2.0, 1.0) == (100.0, "")
    assert metric_verdict("Duration", "n/a", 1.0) == (None, "")


def test_the_viewer_shares_the_comparison_on_screen(client, user, demo_run):
    client.force_login(user)
    html = page(client, demo_run, turn="1.1", against="parent")
    a = re.search(r'name="a" value="(\d+)"', html).group(1)
    b = re.search(r'name="b" value="(\d+)"', html).group(1)
    turns = {t.pk: (t.round_index, t.debug_index) for t in demo_run.turns.all()}
    assert (turns[int(a)], turns[int(b)]) == ((1, 0), (1, 1))
    response = client.post(reverse("runs:share", args=[demo_run.pk]), {"a": a, "b": b})
    assert response.status_code == 302 and response.url.startswith("/s/")
    client.logout()
    assert "softmax_kernel_optimized" in client.get(response.url).content.decode()


def test_the_assembly_tab_shows_the_turns_sass_and_ptx_highlighted_and_escaped(client, user, make_run):
    from apps.runs.models import TurnAssembly

    run = make_run(user)
    turn = Turn.objects.create(run=run, round_index=1, kind="optimize", code="k", verdict="ok", valid=True)
    TurnAssembly.objects.create(
        turn=turn, note="PTX cut at 200 KiB of 250 KiB",
        sass="        Function : softmax_kernel<script>\n        /*0000*/  LDG.E R0, desc[UR4][R2.64] ;\n",
        ptx=".visible .entry _Z6kernelPf(\n.param .u64 p\n)\n{\nld.param.u64 %rd1, [p];\n}")
    client.force_login(user)
    html = page(client, run, turn="1.0")
    assert 'id="tab-asm"' in html and "PTX cut at 200 KiB" in html
    assert '<span class="k">LDG</span><span class="na">.E</span>' in html and "softmax_kernel&lt;script&gt;" in html
    assert "<script>" not in html.split("tab-asm")[1]
    assert "listing-ptx" in html and "(6 lines)" in html and "rd1" in html  # PTX, one row per line
    Turn.objects.create(run=run, round_index=2, kind="optimize", code="k", verdict="compile_error")
    assert "No PTX/SASS stored for this turn" in page(client, run, turn="2.0")


def test_a_finished_turn_stores_the_listing_of_its_compile(user, make_run):
    from apps.runs.execution import DjangoSink
    from worker.agents.pipeline import TurnRecord
    from worker.engine.results import CompileResult, Evaluation, Verdict

    run = make_run(user)
    compiled = CompileResult("candidate", True, "nvcc -c candidate.cu", "", ptx=".entry k", sass="Function : k")
    evaluation = Evaluation(task="vadd", precision="fp32", verdict=Verdict.OK, compile=compiled)
    DjangoSink(run).turn(TurnRecord(round_index=1, debug_index=0, kind="optimize", parent=None, scheme="",
                                    code="k", compile_command="", evaluation=evaluation, verdict="ok", reason="",
                                    score=1.0, valid=True, finished=True))
    stored = Turn.objects.get(run=run, round_index=1).assembly
    assert (stored.ptx, stored.sass, stored.note) == (".entry k", "Function : k", "")


def test_a_run_with_unpriced_llm_calls_says_its_cost_is_unknown_not_zero(client, user, demo_run):
    from apps.runs.models import AgentCall

    calls = AgentCall.objects.filter(turn__run=demo_run)
    assert calls.exists()
    calls.update(priced=False, cost_usd=0)
    Run.objects.filter(pk=demo_run.pk).update(cost_usd=0)
    html = page(client, demo_run)
    assert "unknown <small" in html and f"({calls.count()} calls unpriced)" in html
    calls.filter(pk=calls.first().pk).update(priced=True, cost_usd=0.5)
    Run.objects.filter(pk=demo_run.pk).update(cost_usd=0.5)
    html = page(client, demo_run)
    assert "≥ $0.5000" in html and f"({calls.count() - 1} calls unpriced)" in html
