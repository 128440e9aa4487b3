"""The experiment pages: who may see and change what, launching from the form, live progress, the analyses
per precision, the CSV / JSON / SVG downloads, and the comparison of several experiments.

The main experiment (TRIO) is built from real rows, three trials worked out by hand:

    task         status     best candidate        speedup  baseline → best   tokens  cost
    vadd fp32    succeeded  P 2.5, sizes (2, 8)   4        ML → CB           700     0.055
    vadd bf16    failed (no GPU)                  -        -                 0       0
    relu fp32    succeeded  P 1.0, sizes (1,)     1        ML → MB           300     0.03

all:  success τ=0 2/3, τ=1 1/3 (P = 1 exactly is not above 1), τ=2 1/3, τ=4 0; fast_p 2/3 up to p=0.8,
      then 1/3 (speedup 1 is not above 1); geomean speedup √(4·1) = 2.
fp32: 2 trials: τ=0 100 %, τ=1 50 %; fast_1 50 %.   bf16: 1 trial, all 0.
"""

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from apps.catalog.models import Task
from apps.experiments.models import Experiment
from apps.experiments.services import experiment_launch
from apps.runs.models import AgentCall, Run, RunStatus
from apps.runs.services import RunConfig, run_claim
from tests.web.test_experiments import _finish, _turn, clone

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_worker")]
CB, ML, MB = "compute_bound", "memory_latency_bound", "memory_bandwidth_bound"
EVIL = '<script>alert("x")</script>'


def three_tasks(task) -> list[Task]:
    """vadd fp32 (the conftest task), vadd bf16, relu fp32 in another category."""
    return [task, clone(task, precision="bf16"), clone(task, operator="relu", category="activation")]


@pytest.fixture
def tasks(task):
    return three_tasks(task)


def launch(owner, tasks, name="full", **kw):
    kw.setdefault("config", RunConfig(model="scripted"))
    return experiment_launch(owner=owner, name=name, tasks=tasks, dispatch=False, **kw)


def _member_runs(experiment) -> dict[tuple[str, str], Run]:
    return {(m.task.operator, m.task.precision): m.run for m in experiment.members.select_related("run", "task")}


def _succeed(run, score, speedups, before, after, tokens, cost):
    base = _turn(run, 0, kind="baseline", score=1.0, classes=(before,))
    best = _turn(run, 1, score=score, speedups=speedups, classes=(after,))
    AgentCall.objects.create(turn=best, role="coder", model="m", tokens_in=tokens // 2, tokens_out=tokens - tokens // 2,
                             cost_usd=Decimal(cost))
    _finish(run, RunStatus.SUCCEEDED)
    Run.objects.filter(pk=run.pk).update(best_turn=best, best_score=score)
    return base, best


def build_trio(user, tasks) -> Experiment:
    """The experiment of the module docstring, with its runs finished as the table there says."""
    experiment = launch(user, tasks, name="Full R3 D3", description="the paper's full pipeline")
    runs = _member_runs(experiment)
    _succeed(runs[("vadd", "fp32")], 2.5, (2.0, 8.0), ML, CB, 700, "0.055")
    _finish(runs[("vadd", "bf16")], RunStatus.FAILED, "No NVIDIA GPU on worker host h (nvidia-smi not found)")
    _succeed(runs[("relu", "fp32")], 1.0, (1.0,), ML, MB, 300, "0.03")
    return experiment


@pytest.fixture
def trio(user, tasks):
    return build_trio(user, tasks)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def rows(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.content.decode())))


def urls(experiment) -> list[str]:
    pk = experiment.pk
    return [reverse("experiments:detail", args=[pk]), reverse("experiments:progress", args=[pk]),
            reverse("experiments:export", args=[pk, "fast_p", "csv"]),
            reverse("experiments:export", args=[pk, "outcomes", "json"]),
            reverse("experiments:chart", args=[pk, "success_curve"]),
            f"{reverse('experiments:compare')}?ids={pk}",
            f"{reverse('experiments:compare_export', args=['ablation', 'csv'])}?ids={pk},{pk + 1000}"]


# ------------------------------------------------------------------------------------------ who sees what


def test_anonymous_visitors_see_public_experiments_read_only_and_never_private_ones(user, trio):
    client = Client()
    response = client.get(reverse("experiments:launch"))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    for url in urls(trio):
        assert client.get(url).status_code == 404, url
    assert trio.name not in client.get(reverse("experiments:list")).content.decode()
    Experiment.objects.filter(pk=trio.pk).update(is_public=True)
    for url in urls(trio)[:-1]:  # the last one also names a missing experiment: a 404 either way
        assert client.get(url).status_code == 200, url
    page = client.get(reverse("experiments:detail", args=[trio.pk])).content.decode()
    assert trio.name in client.get(reverse("experiments:list")).content.decode()
    assert reverse("experiments:cancel", args=[trio.pk]) not in page
    for name in ("experiments:cancel", "experiments:rerun"):
        assert client.post(reverse(name, args=[trio.pk])).status_code == 302
    assert not Run.objects.filter(status=RunStatus.CANCELLED).exists()


def test_someone_elses_private_experiment_is_a_404_everywhere(other_user, trio):
    client = signed_in(other_user)
    for url in urls(trio):
        assert client.get(url).status_code == 404, url
    for name in ("experiments:cancel", "experiments:rerun"):
        assert client.post(reverse(name, args=[trio.pk])).status_code == 404
    assert "Full R3 D3" not in client.get(reverse("experiments:list")).content.decode()
    # a variant of it cannot be launched either: the form starts empty
    page = client.get(f"{reverse('experiments:launch')}?from={trio.pk}").content.decode()
    assert "Full R3 D3" not in page


def test_a_public_experiment_is_readable_by_everyone_signed_in_but_only_its_owner_changes_it(
        user, other_user, tasks, django_user_model):
    experiment = launch(user, tasks[:1], name="shared", is_public=True)
    client = signed_in(other_user)
    page = client.get(reverse("experiments:detail", args=[experiment.pk]))
    assert page.status_code == 200 and b"shared" in page.content
    assert b"cancel-experiment" not in page.content  # no buttons for someone else
    assert client.post(reverse("experiments:cancel", args=[experiment.pk])).status_code == 403
    assert client.post(reverse("experiments:rerun", args=[experiment.pk])).status_code == 403
    assert Run.objects.get().status == RunStatus.QUEUED
    staff = django_user_model.objects.create_user(username="root", password="pw-root-123", is_staff=True)
    response = signed_in(staff).post(reverse("experiments:cancel", args=[experiment.pk]))
    assert response.status_code == 302 and Run.objects.get().status == RunStatus.CANCELLED


def test_the_list_shows_your_experiments_and_public_ones(user, other_user, tasks):
    launch(user, tasks[:1], name="alices private")
    launch(other_user, tasks[:1], name="bobs private")
    launch(other_user, tasks[:2], name="bobs public", is_public=True)
    page = signed_in(user).get(reverse("experiments:list")).content.decode()
    assert "alices private" in page and "bobs public" in page and "bobs private" not in page
    mine = signed_in(user).get(reverse("experiments:list") + "?owner=me").content.decode()
    assert "alices private" in mine and "bobs public" not in mine
    assert 'href="/experiments/"' in signed_in(user).get("/").content.decode()  # the nav link


def test_names_and_descriptions_are_escaped(user, tasks):
    experiment = launch(user, tasks[:1], name=EVIL, description=EVIL)
    for url in (reverse("experiments:detail", args=[experiment.pk]), reverse("experiments:list")):
        page = signed_in(user).get(url).content.decode()
        assert EVIL not in page and "&lt;script&gt;" in page


# --------------------------------------------------------------------------------------- cancel and re-run


def test_cancel_and_rerun_need_a_csrf_token(user, trio, tasks):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    url = reverse("experiments:detail", args=[trio.pk])
    assert client.post(reverse("experiments:rerun", args=[trio.pk])).status_code == 403
    assert trio.members.count() == 3
    page = client.get(url).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = client.post(reverse("experiments:rerun", args=[trio.pk]), {"csrfmiddlewaretoken": token})
    assert response.status_code == 302 and response["Location"] == url
    again = trio.members.get(attempt=1)
    assert (again.task.precision, again.run.status) == ("bf16", RunStatus.QUEUED)  # the failed one, once more


def test_the_owner_cancels_the_queued_and_running_runs(user, tasks, no_worker):
    experiment = launch(user, tasks)
    first = experiment.members.order_by("pk").first().run
    run_claim(first.pk, worker_host="h")
    client = signed_in(user)
    page = client.get(reverse("experiments:detail", args=[experiment.pk])).content.decode()
    assert 'id="cancel-experiment"' in page and 'id="rerun-failed"' not in page
    response = client.post(reverse("experiments:cancel", args=[experiment.pk]), follow=True)
    assert "3 queued or running run(s) cancelled" in response.content.decode()
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.CANCELLED}
    page = client.get(reverse("experiments:detail", args=[experiment.pk])).content.decode()
    assert 'id="rerun-failed"' in page and "Re-run failed (3)" in page


# ---------------------------------------------------------------------------------------------- launch


def test_launching_from_the_form_runs_the_selection_times_the_seeds(user, tasks, no_worker):
    clone(tasks[0], suite="other", operator="gelu")
    client = signed_in(user)
    page = client.get(reverse("experiments:launch"))
    assert page.status_code == 200 and b'name="seeds"' in page.content and b'name="suite"' in page.content
    response = client.post(reverse("experiments:launch"), {
        "name": "fp32 of the test suite", "suite": "testsuite", "precision": "fp32", "seeds": 2,
        "model": "m", "rounds": 1, "debug_rounds": 0, "profile_mode": "none", "temperature": 0.2, "seed": 40,
    })
    experiment = Experiment.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("experiments:detail", args=[experiment.pk])
    members = experiment.members.select_related("task", "run").order_by("task__operator", "seed_index")
    assert [(m.task.operator, m.task.precision, m.run.seed) for m in members] == [
        ("relu", "fp32", 40), ("relu", "fp32", 41), ("vadd", "fp32", 40), ("vadd", "fp32", 41)]
    assert (experiment.selection, experiment.rounds, experiment.debug_rounds, experiment.profile_mode) == (
        "suite testsuite, precision fp32", 1, 0, "none")
    assert len(no_worker) == 0  # dispatched on commit only, which a test transaction never reaches


def test_hand_picked_tasks_narrow_the_criteria(user, tasks):
    vadd32, vadd16, relu = tasks
    response = signed_in(user).post(reverse("experiments:launch"), {
        "name": "picked", "tasks": [vadd16.pk, relu.pk], "seeds": 1, "model": "m", "rounds": 3, "debug_rounds": 3,
        "profile_mode": "filtered", "temperature": 0.2, "is_public": "on"})
    assert response.status_code == 302
    experiment = Experiment.objects.get()
    assert set(experiment.members.values_list("task_id", flat=True)) == {vadd16.pk, relu.pk}
    assert experiment.is_public and experiment.selection == "2 hand-picked tasks"


@pytest.mark.parametrize(("change", "message"), [
    ({}, "Choose the tasks"),
    ({"precision": "bf16", "category": "activation"}, "No enabled task matches this selection"),
    ({"suite": "testsuite", "seeds": 11}, "Ensure this value is less than or equal to 10"),
    ({"suite": "testsuite", "name": ""}, "This field is required"),
])
def test_a_launch_that_cannot_run_says_why_and_creates_nothing(user, tasks, change, message):
    data = {"name": "x", "seeds": 1, "model": "m", "rounds": 3, "debug_rounds": 3, "profile_mode": "filtered",
            "temperature": 0.2, **change}
    response = signed_in(user).post(reverse("experiments:launch"), data)
    assert response.status_code == 200 and message in response.content.decode()
    assert not Experiment.objects.exists() and not Run.objects.exists()


def test_a_variant_starts_from_the_experiments_configuration_and_tasks(user, trio, tasks):
    trio.rounds, trio.profile_mode = 2, "full"
    trio.save()
    page = signed_in(user).get(f"{reverse('experiments:launch')}?from={trio.pk}").content.decode()
    assert 'value="Full R3 D3 (variant)"' in page
    assert all(re.search(rf'name="tasks" value="{t.pk}" checked', page) for t in tasks)
    assert re.search(r'name="rounds" value="2"', page)
    assert re.search(r'<option value="full" selected>', page)


# ---------------------------------------------------------------------------------------------- progress


def test_progress_is_polled_while_active_and_reloads_the_page_when_done(user, tasks):
    experiment = launch(user, tasks[:2])
    client = signed_in(user)
    url = reverse("experiments:progress", args=[experiment.pk])
    fragment = client.get(url, HTTP_HX_REQUEST="true")
    assert 'hx-trigger="every 3s"' in fragment.content.decode() and "HX-Refresh" not in fragment
    assert '0 of 2 done' in fragment.content.decode()
    for member in experiment.members.select_related("run"):
        _finish(member.run, RunStatus.FAILED, "No NVIDIA GPU on worker host h")
    fragment = client.get(url, HTTP_HX_REQUEST="true")
    assert fragment["HX-Refresh"] == "true" and "hx-trigger" not in fragment.content.decode()
    assert "2 of 2 done" in fragment.content.decode() and "No NVIDIA GPU on worker host h" in fragment.content.decode()
    page = client.get(reverse("experiments:detail", args=[experiment.pk])).content.decode()
    assert "hx-trigger" not in page  # a finished experiment is not polled


# ---------------------------------------------------------------------------------------------- analyses


def _fact(page: str, name: str) -> str:
    return re.sub(r"\s+", " ", re.search(rf'id="fact-{name}">(.*?)</dd>', page, re.S).group(1)).strip()


def test_the_detail_page_shows_the_hand_checked_numbers(user, trio):
    page = signed_in(user).get(reverse("experiments:detail", args=[trio.pk])).content.decode()
    assert _fact(page, "trials") == "3"
    assert _fact(page, "correct") == "2 <small>(66.7%)</small>"
    assert _fact(page, "fast1") == "33.3%"
    row = re.search(r'<tr data-series="all">(.*?)</tr>', page, re.S).group(1)
    assert re.findall(r">([\d.]+%)<", row) == ["66.7%", "33.3%", "33.3%", "0.0%", "0.0%", "0.0%", "0.0%"]
    assert re.search(r'<tr data-series="fp32">', page) and re.search(r'<tr data-series="bf16">', page)
    # The geometric mean of the correct trials' speedups, √(4·1), in the header's facts.
    assert re.search(r"<dt>Geomean speedup \(correct\)</dt><dd class=\"big\">2\.00×</dd>", page)
    migration = re.search(r'<table class="grid compact numbers migration">(.*?)</table>', page, re.S).group(1)
    ml_row = re.search(r"<th scope=\"row\">Memory latency bound</th>(.*?)</tr>", migration, re.S).group(1)
    assert re.findall(r">(\d+)</td>", ml_row) == ["1", "0", "1", "2"]  # → CB 1, → ML 0, → MB 1, total 2
    assert 'data-chart="lines"' in page and 'data-chart="operators"' in page
    assert page.count("<svg") == 3  # the server-drawn charts, for readers without JavaScript


def test_the_precision_switch_restricts_every_analysis_to_that_precision(user, trio):
    client = signed_in(user)
    page = client.get(reverse("experiments:detail", args=[trio.pk]) + "?precision=fp32").content.decode()
    assert re.search(r'<a href="\?precision=fp32" data-precision="fp32" class="active"', page)
    assert _fact(page, "trials") == "2" and _fact(page, "fast1") == "50.0%"
    assert re.search(r'<tr data-series="fp32">', page) and not re.search(r'<tr data-series="all">', page)
    assert "relu" in page and ">bf16<" not in page.split('id="analyses"')[1]
    assert "/export/fast_p.csv?precision=fp32" in page and "/charts/fast_p.svg?precision=fp32" in page
    page = client.get(reverse("experiments:detail", args=[trio.pk]) + "?precision=bf16").content.decode()
    assert _fact(page, "trials") == "1" and _fact(page, "correct") == "0 <small>(0.0%)</small>"
    assert client.get(reverse("experiments:detail", args=[trio.pk]) + "?precision=fp64").status_code == 404


def test_csv_downloads_hold_the_tables_numbers(user, trio):
    client = signed_in(user)
    response = client.get(reverse("experiments:export", args=[trio.pk, "fast_p", "csv"]) + "?precision=fp32")
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == f'attachment; filename="experiment-{trio.pk}-fast_p-fp32.csv"'
    assert rows(response) == [["p", "fast", "trials", "fast_p"], ["0", "2", "2", "1.0"], ["0.5", "2", "2", "1.0"],
                              ["0.8", "2", "2", "1.0"], ["1", "1", "2", "0.5"], ["1.5", "1", "2", "0.5"],
                              ["2", "1", "2", "0.5"]]
    curve = rows(client.get(reverse("experiments:export", args=[trio.pk, "success_curve", "csv"])))
    assert curve[0] == ["tau", "precision", "successes", "trials", "rate"]
    assert ["1", "all", "1", "3", str(1 / 3)] in curve and ["0", "bf16", "0", "1", "0.0"] in curve
    cost = rows(client.get(reverse("experiments:export", args=[trio.pk, "cost", "csv"])))
    assert cost[1][:3] == ["all", "3", "1000"] and float(cost[1][3]) == pytest.approx(0.085)
    assert cost[2][:3] == ["coder", "3", "1000"] and float(cost[2][4]) == pytest.approx(1000 / 3)
    geo = rows(client.get(reverse("experiments:export", args=[trio.pk, "geomean_speedup", "csv"])))
    assert geo == [["correct", "trials", "geomean_speedup"], ["2", "3", "2.0"]]
    assert client.get(reverse("experiments:export", args=[trio.pk, "nothing", "csv"])).status_code == 404


def test_json_downloads_list_every_row_as_an_object(user, trio):
    response = signed_in(user).get(reverse("experiments:export", args=[trio.pk, "outcomes", "json"]))
    assert response["Content-Disposition"].endswith('outcomes.json"')
    data = json.loads(response.content)
    assert data["name"] == "outcomes" and len(data["rows"]) == 3
    by_task = {(r["operator"], r["precision"]): r for r in data["rows"]}
    assert by_task[("vadd", "fp32")]["P"] == 2.5 and by_task[("vadd", "fp32")]["speedup"] == pytest.approx(4.0)
    assert by_task[("vadd", "bf16")]["correct"] is False and by_task[("vadd", "bf16")]["P"] is None
    assert by_task[("vadd", "bf16")]["error"].startswith("No NVIDIA GPU")
    operators = json.loads(signed_in(user).get(reverse("experiments:export",
                                                       args=[trio.pk, "operators", "json"])).content)
    assert [(r["operator"], r["precision"], r["best_P"]) for r in operators["rows"]] == [
        ("relu", "fp32", 1.0), ("vadd", "bf16", None), ("vadd", "fp32", 2.5)]


def test_a_task_name_that_looks_like_a_formula_is_defused_in_the_csv(user, tasks):
    Task.objects.filter(pk=tasks[0].pk).update(operator="=HYPERLINK(1)")
    experiment = launch(user, tasks[:1])
    table = rows(signed_in(user).get(reverse("experiments:export", args=[experiment.pk, "outcomes", "csv"])))
    assert table[1][1] == "'=HYPERLINK(1)"


def test_charts_download_as_standalone_svg_with_the_text_escaped(user, tasks):
    experiment = launch(user, tasks[:1], name=EVIL)
    Task.objects.filter(pk=tasks[0].pk).update(operator="</text><script>alert(1)</script>")
    response = signed_in(user).get(reverse("experiments:chart", args=[experiment.pk, "operators"]))
    assert response["Content-Type"].startswith("image/svg+xml")
    assert "default-src 'none'" in response["Content-Security-Policy"]
    svg = response.content.decode()
    root = ET.fromstring(svg)  # well-formed: the names did not break out of their text nodes
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "<script" not in svg and not root.findall(".//{http://www.w3.org/2000/svg}script")
    assert "&lt;script&gt;" in svg
    curve = signed_in(user).get(reverse("experiments:chart", args=[experiment.pk, "success_curve"]) + "?precision=fp32")
    assert curve["Content-Disposition"] == f'attachment; filename="experiment-{experiment.pk}-success_curve-fp32.svg"'
    assert signed_in(user).get(reverse("experiments:chart", args=[experiment.pk, "nope"])).status_code == 404


# ----------------------------------------------------------------------------------------------- compare


def test_compare_shows_the_ablation_over_the_shared_tasks(user, other_user, trio, tasks):
    no_debug = launch(user, tasks[:2], name="no debug", config=RunConfig(model="scripted", debug_rounds=0))
    runs = _member_runs(no_debug)
    _succeed(runs[("vadd", "fp32")], 1.5, (1.5,), ML, MB, 100, "0.01")
    _succeed(runs[("vadd", "bf16")], 3.0, (3.0,), CB, CB, 100, "0.01")
    client = signed_in(user)
    url = f"{reverse('experiments:compare')}?ids={trio.pk}&ids={no_debug.pk}"
    page = client.get(url).content.decode()
    assert f"#{trio.pk} Full R3 D3" in page and f"#{no_debug.pk} no debug" in page
    debug_row = re.search(r'<tr data-metric="debug rounds D">(.*?)</tr>', page, re.S).group(1)
    assert re.findall(r"<td[^>]*>(.*?)</td>", debug_row) == ["3", "0"]
    success = re.search(r'<tr data-metric="success P&gt;1">(.*?)</tr>', page, re.S).group(1)
    # vadd fp32 and bf16 only: Full has P 2.5 and a failure, no-debug P 1.5 and 3.0
    assert re.findall(r"<td[^>]*>(.*?)</td>", success) == ["50.0%", "100.0%"]
    dropped = rows(client.get(reverse("experiments:compare_export", args=["ablation", "csv"])
                              + f"?ids={trio.pk},{no_debug.pk}"))
    assert dropped[0] == ["metric", f"#{trio.pk} Full R3 D3", f"#{no_debug.pk} no debug"]
    assert dropped[-1] == ["trials dropped (task not in every experiment)", "1", "0"]
    fp32 = rows(client.get(reverse("experiments:compare_export", args=["ablation", "csv"])
                           + f"?ids={trio.pk},{no_debug.pk}&precision=bf16"))
    assert next(r for r in fp32 if r[0] == "success P>0") == ["success P>0", "0.0", "1.0"]
    svg = client.get(reverse("experiments:compare_chart", args=["fast_p"]) + f"?ids={trio.pk},{no_debug.pk}")
    assert svg.status_code == 200 and svg.content.count(b"<polyline") == 2
    # someone else's private experiment cannot be put beside yours
    bobs = launch(other_user, tasks[:1], name="bobs")
    assert client.get(f"{reverse('experiments:compare')}?ids={trio.pk},{bobs.pk}").status_code == 404


def test_compare_with_fewer_than_two_lets_you_pick(user, trio):
    page = signed_in(user).get(f"{reverse('experiments:compare')}?ids={trio.pk}").content.decode()
    assert "Pick two experiments or more" in page and f'value="{trio.pk}" aria-label' in page
    assert signed_in(user).get(f"{reverse('experiments:compare')}?ids=abc").status_code == 404
    export = reverse("experiments:compare_export", args=["ablation", "csv"]) + f"?ids={trio.pk}"
    assert signed_in(user).get(export).status_code == 404


def test_library_references_from_the_configured_file_appear_beside_the_best_candidates(user, trio, tmp_path,
                                                                                      settings):
    bench = {"reference": [{"task": "vadd", "precision": "fp32", "verdict": "ok", "score": 5.0,
                            "sizes": [{"index": 0, "speedup": 4.0}, {"index": 1, "speedup": 6.0}]},
                           {"task": "relu", "precision": "fp32", "verdict": "ok", "score": 0.8, "sizes": []}]}
    path = tmp_path / "library.json"
    path.write_text(json.dumps(bench))
    client = signed_in(user)
    page = client.get(reverse("experiments:detail", args=[trio.pk])).content.decode()
    assert 'id="table-library_comparison"' not in page  # no file configured: no comparison
    settings.LIBRARY_REFERENCES_FILE = str(path)
    page = client.get(reverse("experiments:detail", args=[trio.pk])).content.decode()
    assert 'id="table-library_comparison"' in page and "Mean expert-relative speed" in page
    library = json.loads(client.get(reverse("experiments:export", args=[trio.pk, "library_comparison", "json"]))
                         .content)["rows"]
    # vadd fp32: 2.5 / 5.0; relu fp32: 1.0 / 0.8 (faster than the library)
    assert [(r["operator"], r["expert_relative"]) for r in library] == [("relu", pytest.approx(1.25)),
                                                                       ("vadd", pytest.approx(0.5))]
    assert library[1]["reference_speedups"] == "4;6"
    chart = client.get(reverse("experiments:chart", args=[trio.pk, "operators"])).content.decode()
    assert "library reference P" in chart
    assert "4 · 6" in page  # the per-size speedups, short


def test_per_size_speedups_read_as_short_numbers_in_the_page_and_stay_exact_in_the_csv():
    from apps.experiments.templatetags.experiment_format import cell

    assert cell("1.05231;0.971488;;12.3456", "reference_speedups") == "1.05 · 0.971 · — · 12.3"
    assert cell(1.05231, "score") == "1.052"  # other numbers keep their 4 significant digits


def test_the_detail_page_reads_a_fixed_number_of_queries_whatever_the_number_of_tasks(
        user, trio, tasks, django_assert_max_num_queries):
    client = signed_in(user)
    client.get(reverse("experiments:detail", args=[trio.pk]))  # warm the session
    with django_assert_max_num_queries(12):
        assert client.get(reverse("experiments:detail", args=[trio.pk])).status_code == 200
    for n in range(10):
        clone(tasks[0], operator=f"op{n}")
    bigger = launch(user, list(Task.objects.all()), name="bigger")
    with django_assert_max_num_queries(12):
        assert client.get(reverse("experiments:detail", args=[bigger.pk])).status_code == 200
