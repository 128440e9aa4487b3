"""The public showcase, operator pages, immutable share links and the static export."""

import json
import re
from html.parser import HTMLParser
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.urls import reverse

from apps.catalog.services import tasks_sync
from apps.runs.models import Run, RunStatus, Turn, TurnKind
from apps.showcase.models import ShareLink

pytestmark = pytest.mark.django_db
DEMO = Path(settings.BASE_DIR) / "demo" / "trajectories"
SOFTMAX = DEMO / "softmax_fp32_trajectory.json"


@pytest.fixture
def library(db):
    tasks_sync(settings.TASKS_DIR)


@pytest.fixture
def demo(library, admin_user):
    """The three committed H200 trajectories, imported as public runs owned by the admin."""
    call_command("import_trajectory", *sorted(str(p) for p in DEMO.glob("*.json")), "--public", stdout=StringIO())
    return {run.task.operator: run for run in Run.objects.select_related("task")}


def _finished_run(owner, task, *, public, best_code="__global__ void k_optimized() {}\n", score=2.0,
                  status=RunStatus.SUCCEEDED, valid=True):
    """A finished run with a baseline turn and one optimized turn (1 size: 2 ms -> 2/score ms)."""
    run = Run.objects.create(task=task, owner=owner, is_public=public, status=status, model="scripted",
                             gpu_name="Test GPU", best_score=score)
    size = {"params": {"N": 1024}, "complexity": 1024.0, "flags": []}
    baseline = Turn.objects.create(
        run=run, round_index=0, kind=TurnKind.BASELINE, code=task.baseline_source, valid=True, score=1.0,
        results=[{**size, "correct": None, "baseline": {"mean_ms": 2.0, "cv": 0.01}, "candidate": None,
                  "speedup": None}],
    )
    best = Turn.objects.create(
        run=run, round_index=1, kind=TurnKind.OPTIMIZE, code=best_code, valid=valid, score=score, parent=baseline,
        results=[{**size, "correct": True, "baseline": {"mean_ms": 2.0, "cv": 0.01},
                  "candidate": {"mean_ms": 2.0 / score, "cv": 0.02}, "speedup": score}],
    )
    Run.objects.filter(pk=run.pk).update(best_turn=best)
    run.refresh_from_db()
    return run


def _turns(run):
    return list(run.turns.order_by("round_index", "debug_index"))


def _share(client, run, a, b):
    return client.post(reverse("runs:share", args=[run.pk]), {"a": a.pk, "b": b.pk})


def _key(response) -> str:
    assert response.status_code == 302, response.status_code
    match = re.fullmatch(r"/s/([A-Za-z0-9_-]{20})/", response["Location"])
    assert match, response["Location"]
    return match.group(1)


# ---- the showcase index -----------------------------------------------------------------------------------


def test_anonymous_visitor_sees_one_card_per_operator_with_its_numbers(demo):
    response = Client().get("/showcase/")
    assert response.status_code == 200
    html = response.content.decode()
    for operator in ("softmax", "matrix_mul", "dot_product"):
        assert reverse("showcase:operator", args=["mskernelbench", operator, "fp32"]) in html
    assert "180.46×" in html  # softmax's best P, recorded on the H200
    assert "35.34× over 16 sizes" in html  # geometric mean of its 16 per-size speedups
    assert "NVIDIA H200" in html


def test_each_task_shows_only_its_best_public_run(demo, admin_user):
    call_command("import_trajectory", str(SOFTMAX), "--public", "--force", stdout=StringIO())
    weaker = Run.objects.order_by("-pk").first()
    Run.objects.filter(pk=weaker.pk).update(best_score=3.0)
    better_but_private = _finished_run(admin_user, demo["softmax"].task, public=False, score=999.0)
    html = Client().get("/showcase/").content.decode()
    assert html.count(reverse("showcase:operator", args=["mskernelbench", "softmax", "fp32"])) == 2  # title + link
    assert "180.46×" in html and "3.00×" not in html and "999" not in html
    assert better_but_private.pk  # exists, yet not shown


def test_private_failed_and_invalid_runs_never_appear_on_the_showcase(task, user):
    private = _finished_run(user, task, public=False)
    html = Client().get("/showcase/").content.decode()
    assert "vadd" not in html and "Nothing on show yet" in html
    assert Client().get("/showcase/testsuite/vadd/fp32/").status_code == 404
    assert Client().get(f"/showcase/{task.pk}/").status_code == 404
    Run.objects.filter(pk=private.pk).update(status=RunStatus.FAILED, is_public=True)
    assert "vadd" not in Client().get("/showcase/").content.decode()
    _finished_run(user, task, public=True, valid=False)
    assert "vadd" not in Client().get("/showcase/").content.decode()
    _finished_run(user, task, public=True)
    assert "vadd" in Client().get("/showcase/").content.decode()


def test_the_old_showcase_url_name_leads_to_the_new_page():
    response = Client().get(reverse("runs:showcase"))
    assert response.status_code == 301 and response["Location"] == "/showcase/"


def test_index_and_operator_page_use_a_bounded_number_of_queries(demo, user, django_assert_max_num_queries):
    for operator in ("softmax", "matrix_mul", "dot_product"):  # more runs must not mean more queries
        _finished_run(user, demo[operator].task, public=True, score=1.5)
    client = Client()
    # index: the cards, their verification states, and three counts of what is left off and why
    with django_assert_max_num_queries(5):
        assert client.get("/showcase/").status_code == 200
    with django_assert_max_num_queries(5):
        assert client.get("/showcase/mskernelbench/softmax/fp32/").status_code == 200


# ---- the operator page ------------------------------------------------------------------------------------


def test_operator_page_shows_original_versus_optimized_with_per_size_numbers(demo):
    run = demo["softmax"]
    baseline, best = run.turns.get(round_index=0), run.best_turn
    response = Client().get("/showcase/mskernelbench/softmax/fp32/")
    assert response.status_code == 200
    html = response.content.decode()
    # Both codes, side by side, changed lines marked, line numbers.
    assert "original (baseline)" in html and f"optimized ({'round 1.1 (debug)'})" in html
    assert 'class="sc-replace"' in html  # a rewritten kernel: replaced lines on both sides
    assert '<td class="sc-no">1</td>' in html
    assert "softmax_kernel_optimized" in best.code and "softmax_kernel_optimized" in html
    assert baseline.code.splitlines()[0].split()[0] in html
    # The table carries every size's numbers (the chart only repeats them).
    table = html[html.index('class="grid sc-sizes"'):html.index("</table>", html.index('class="grid sc-sizes"'))]
    assert table.count("<tr") == 1 + 16 and "N=16, C=256" in table and "3.77×" in table
    chart = json.loads(re.search(r'<script id="sc-speedups" type="application/json">(.*?)</script>', html).group(1))
    assert len(chart["turns"]) == 16 and chart["turns"][0]["speedups"][0] == pytest.approx(3.7747, rel=1e-3)
    assert 'data-chart="size-strips"' in html and 'data-source="sc-speedups"' in html
    # How it was measured: GPU, toolchain (no host names or paths), configuration, the full trajectory.
    assert "NVIDIA H200" in html and "V13.0.88" in html and "sm_90" in html and "/usr/local/cuda" not in html
    assert "nvcc -O3 -arch=sm_90" in html and "scripted" in html
    assert f'href="/runs/{run.pk}/"' in html


def test_operator_page_by_task_id_redirects_to_its_canonical_address(demo):
    task = demo["dot_product"].task
    response = Client().get(f"/showcase/{task.pk}/")
    assert response.status_code == 301 and response["Location"] == "/showcase/mskernelbench/dot_product/fp32/"


def test_code_with_script_tags_renders_escaped(task, user, client):
    evil = '__global__ void k_optimized() {}\n// </script><script>alert("x")</script>\n'
    run = _finished_run(user, task, public=True, best_code=evil)
    for html in [Client().get("/showcase/testsuite/vadd/fp32/").content.decode()]:
        assert '<script>alert("x")' not in html and "&lt;script&gt;alert" in html
    client.force_login(user)
    baseline, best = _turns(run)
    key = _key(_share(client, run, baseline, best))
    html = Client().get(f"/s/{key}/").content.decode()
    assert '<script>alert("x")' not in html and "&lt;script&gt;alert" in html


# ---- share links --------------------------------------------------------------------------------------------


def test_the_same_user_sharing_the_same_pair_again_gets_the_same_link(demo, admin_user, client):
    client.force_login(admin_user)
    run = demo["softmax"]
    baseline, compile_error, fixed, *_ = _turns(run)
    key = _key(_share(client, run, baseline, fixed))
    assert _key(_share(client, run, baseline, fixed)) == key  # same pair, same link
    assert _key(_share(client, run, compile_error, fixed)) != key  # another pair, another link
    assert _key(_share(client, run, fixed, baseline)) != key  # the order is part of the comparison
    assert ShareLink.objects.count() == 3
    link = ShareLink.objects.get(key=key)
    assert (link.run, link.created_by) == (run, admin_user)


def test_new_share_keys_are_random_not_derived_from_the_content(demo, admin_user, client, django_user_model):
    from apps.showcase.sharing import share_snapshot, snapshot_key

    client.force_login(admin_user)
    run = demo["softmax"]
    baseline, _, fixed, *_ = _turns(run)
    key = _key(_share(client, run, baseline, fixed))
    assert key != snapshot_key(share_snapshot(run, baseline, fixed))
    other = django_user_model.objects.create_user(username="carol", password="pw-carol-123", is_staff=True)
    client.force_login(other)
    other_key = _key(_share(client, run, baseline, fixed))
    assert other_key != key  # another user sharing the same content cannot learn (or compute) the first link
    assert ShareLink.objects.get(key=key).snapshot == ShareLink.objects.get(key=other_key).snapshot
    keys = {_key(_share(client, run, a, b)) for a, b in [(baseline, fixed), (fixed, baseline), (baseline, baseline)]}
    assert len(keys) == 3 and all(len(k) == 20 for k in keys)


def test_links_made_with_content_derived_keys_keep_working(demo, admin_user):
    from apps.showcase.sharing import share_snapshot, snapshot_key

    run = demo["softmax"]
    baseline, _, fixed, *_ = _turns(run)
    snapshot = share_snapshot(run, baseline, fixed)
    old = ShareLink.objects.create(key=snapshot_key(snapshot), snapshot=snapshot, run=run, created_by=admin_user)
    assert re.fullmatch(r"[0-9a-f]{20}", old.key)
    response = Client().get(f"/s/{old.key}/")
    assert response.status_code == 200
    assert "Share" not in ShareLink.objects.get(pk=old.pk).key  # untouched


def test_share_page_is_public_and_shows_only_what_was_shared(demo, admin_user, client):
    run = demo["softmax"]
    baseline, compile_error, fixed, *_ = _turns(run)
    Turn.objects.filter(pk=compile_error.pk).update(code="// NOT_SHARED_CODE", scheme="NOT_SHARED_SCHEME")
    client.force_login(admin_user)
    key = _key(_share(client, run, baseline, fixed))
    Run.objects.filter(pk=run.pk).update(is_public=False)  # a visitor who cannot see the run (anyone sees public ones)
    response = Client().get(f"/s/{key}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "softmax_kernel_optimized" in html and "NVIDIA H200" in html and "N=16, C=256" in html
    assert "NOT_SHARED" not in html and fixed.scheme[:40] not in html
    assert f"/runs/{run.pk}/" not in html  # no trace of the run for a visitor who cannot see it
    assert f'href="/runs/{run.pk}/"' in client.get(f"/s/{key}/").content.decode()  # its owner gets the link


def test_share_link_survives_code_changes_and_run_deletion(demo, admin_user, client):
    run = demo["dot_product"]
    baseline, best = run.turns.get(round_index=0), run.best_turn
    client.force_login(admin_user)
    key = _key(_share(client, run, baseline, best))
    Turn.objects.filter(pk=best.pk).update(code="// rewritten afterwards")
    page = Client().get(f"/s/{key}/").content.decode()
    assert "rewritten afterwards" not in page and "dot_product_kernel_optimized" in page
    assert _key(_share(client, run, baseline, Turn.objects.get(pk=best.pk))) != key  # new content, new link
    run.delete()
    assert ShareLink.objects.get(key=key).run is None
    page = Client().get(f"/s/{key}/").content.decode()
    assert "dot_product_kernel_optimized" in page and "7.74×" in page


def test_a_saved_share_link_cannot_be_changed(demo, admin_user, client):
    client.force_login(admin_user)
    run = demo["matrix_mul"]
    link = ShareLink.objects.get(key=_key(_share(client, run, _turns(run)[0], run.best_turn)))
    link.snapshot = {"tampered": True}
    with pytest.raises(ValueError, match="never changes"):
        link.save()


def test_creating_a_share_link_needs_a_csrf_token(task, user):
    run = _finished_run(user, task, public=False)
    baseline, best = _turns(run)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert _share(client, run, baseline, best).status_code == 403
    assert not ShareLink.objects.exists()
    client.get("/showcase/")  # any page with a form sets the CSRF cookie (here: the log-out button)
    token = client.cookies["csrftoken"].value
    response = client.post(reverse("runs:share", args=[run.pk]),
                           {"a": baseline.pk, "b": best.pk, "csrfmiddlewaretoken": token})
    assert _key(response) == ShareLink.objects.get().key


def test_only_users_who_can_see_the_run_may_share_it(task, user, other_user, client):
    run = _finished_run(user, task, public=False)
    baseline, best = _turns(run)
    client.force_login(other_user)
    assert _share(client, run, baseline, best).status_code == 404  # not theirs, not public
    anonymous = _share(Client(), run, baseline, best)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    refused = Client().get(reverse("runs:share", args=[run.pk]))  # login first, before the method
    assert refused.status_code == 302 and refused["Location"].startswith(reverse("login"))
    assert not ShareLink.objects.exists()
    Run.objects.filter(pk=run.pk).update(is_public=True)  # public runs are visible to every signed-in user
    assert _key(_share(client, run, baseline, best))


def test_turns_must_belong_to_the_shared_run(task, user, client):
    run, other = _finished_run(user, task, public=False), _finished_run(user, task, public=False)
    client.force_login(user)
    assert _share(client, run, _turns(run)[0], _turns(other)[1]).status_code == 404
    assert client.post(reverse("runs:share", args=[run.pk]), {"a": "x", "b": "1"}).status_code == 404
    assert client.post(reverse("runs:share", args=[run.pk]), {}).status_code == 404
    assert not ShareLink.objects.exists()


def test_an_unknown_share_key_is_404():
    assert Client().get("/s/0123456789abcdef0123/").status_code == 404


def test_share_form_include_posts_both_turns_with_a_csrf_token(task, user):
    run = _finished_run(user, task, public=False)
    baseline, best = _turns(run)
    request = RequestFactory().get("/")
    request.user = user  # anonymous visitors get no form: sharing needs an account
    html = render_to_string("runs/_share_form.html", {"run": run, "turn_a": baseline, "turn_b": best}, request)
    assert f'action="/runs/{run.pk}/share/"' in html and 'method="post"' in html
    assert f'name="a" value="{baseline.pk}"' in html and f'name="b" value="{best.pk}"' in html
    assert "csrfmiddlewaretoken" in html
    assert render_to_string("runs/_share_form.html", {"run": run, "turn_a": None, "turn_b": best}).strip() == ""


# ---- static export ------------------------------------------------------------------------------------------


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.links += [value for name, value in attrs if name in ("href", "src") and value is not None]


def test_export_writes_pages_whose_links_are_all_relative_and_exist(demo, tmp_path):
    out = tmp_path / "site"
    stdout = StringIO()
    call_command("export_showcase", str(out), stdout=stdout, stderr=StringIO())
    assert "Wrote 6 page(s)" in stdout.getvalue()
    pages = sorted(out.glob("*.html"))
    assert [p.name for p in pages] == [
        "cudahercules-examples--vector_add_make--fp32.html", "index.html",
        "kernelbench-examples--scale_bias_leaky_relu--fp32.html", "mskernelbench--dot_product--fp32.html",
        "mskernelbench--matrix_mul--fp32.html", "mskernelbench--softmax--fp32.html",
    ]
    kernelbench = (out / "kernelbench-examples--scale_bias_leaky_relu--fp32.html").read_text()
    assert "load_inline" in kernelbench and '<span class="k">class</span>' in kernelbench  # Python, highlighted
    checked = 0
    for page in pages:
        html = page.read_text()
        parser = _Links()
        parser.feed(html)
        for link in parser.links:
            target = link.split("#")[0]
            if not target:
                continue  # an in-page anchor
            assert not re.match(r"^([a-z]+:|/)", target), f"{page.name}: {link} is not relative"
            assert (page.parent / target).is_file(), f"{page.name}: {link} does not exist"
            checked += 1
        assert "/runs/" not in html and "/static/" not in html
    assert checked >= 4 * 5  # every page links its CSS, script and back to the index
    softmax = (out / "mskernelbench--softmax--fp32.html").read_text()
    assert "softmax_kernel_optimized" in softmax and "3.77×" in softmax and 'id="sc-speedups"' in softmax


def test_export_refuses_a_non_empty_directory_unless_forced(demo, tmp_path):
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(CommandError, match="not empty.*--force"):
        call_command("export_showcase", str(tmp_path), stdout=StringIO(), stderr=StringIO())
    assert not (tmp_path / "index.html").exists()
    call_command("export_showcase", str(tmp_path), "--force", stdout=StringIO(), stderr=StringIO())
    assert (tmp_path / "index.html").is_file() and (tmp_path / "notes.txt").read_text() == "keep me"
