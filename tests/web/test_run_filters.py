"""The runs list: filters, sorting and paging in the URL, bad parameters, ownership, htmx, query bounds."""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone

from apps.catalog.models import Task
from apps.runs.filters import FilterChoices, RunFilters, filter_choices
from apps.runs.models import Run, RunStatus
from apps.runs.templatetags.run_format import duration, tokens, usd

pytestmark = pytest.mark.django_db


def listed(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<a href="/runs/(\d+)/">#', html)]


@pytest.fixture
def tasks(task):
    bf16 = Task.objects.get(pk=task.pk)
    bf16.pk, bf16.precision, bf16.entry_point = None, "bf16", "vadd_bf16"
    bf16.save()
    mm = Task.objects.get(pk=task.pk)
    mm.pk, mm.suite, mm.operator, mm.category, mm.entry_point = None, "other", "mm", "reduction", "mm"
    mm.save()
    return {"vadd": task, "vadd_bf16": bf16, "mm": mm}


@pytest.fixture
def run(tasks):
    counter = iter(range(1000))

    def make(owner, task="vadd", **fields):
        fields.setdefault("model", "gpt-a")
        created = fields.pop("age_days", next(counter))
        made = Run.objects.create(task=tasks[task], owner=owner, **fields)
        Run.objects.filter(pk=made.pk).update(created_at=timezone.now() - timedelta(days=created))
        return made

    return make


def get(client, **params):
    response = client.get(reverse("runs:list"), params)
    assert response.status_code == 200
    return response.content.decode()


def test_each_filter_narrows_the_list(client, user, other_user, run):
    a = run(user, "vadd", model="gpt-a", status=RunStatus.SUCCEEDED)
    b = run(user, "vadd_bf16", model="gpt-b", status=RunStatus.FAILED)
    c = run(user, "mm", model="gpt-a", status=RunStatus.RUNNING)
    d = run(other_user, "vadd", model="gpt-b", is_public=True)
    client.force_login(user)
    assert set(listed(get(client))) == {a.pk, b.pk, c.pk, d.pk}
    assert set(listed(get(client, task="vadd"))) == {a.pk, b.pk, d.pk}
    assert listed(get(client, task="vadd", precision="bf16")) == [b.pk]
    assert listed(get(client, suite="other")) == [c.pk]
    assert listed(get(client, category="reduction")) == [c.pk]
    assert set(listed(get(client, model="gpt-b"))) == {b.pk, d.pk}
    assert listed(get(client, status="failed")) == [b.pk]
    assert set(listed(get(client, owner="me"))) == {a.pk, b.pk, c.pk}
    assert listed(get(client, owner="bob")) == [d.pk]


def test_sorting_by_p_keeps_unscored_runs_last_in_both_directions(client, user, run):
    low, high, none = run(user, best_score=1.2), run(user, best_score=3.4), run(user, best_score=None)
    client.force_login(user)
    assert listed(get(client, sort="-p")) == [high.pk, low.pk, none.pk]
    assert listed(get(client, sort="p")) == [low.pk, high.pk, none.pk]


def test_sorting_by_cost_and_by_date(client, user, run):
    new = run(user, cost_usd=Decimal("0.5"), age_days=0)
    old = run(user, cost_usd=Decimal("2"), age_days=5)
    mid = run(user, cost_usd=Decimal("0.01"), age_days=2)
    client.force_login(user)
    assert listed(get(client)) == [new.pk, mid.pk, old.pk]  # newest first by default
    assert listed(get(client, sort="created")) == [old.pk, mid.pk, new.pk]
    assert listed(get(client, sort="-cost")) == [old.pk, new.pk, mid.pk]
    assert listed(get(client, sort="cost")) == [mid.pk, new.pk, old.pk]


def test_column_headers_toggle_the_sort_and_keep_the_filters(client, user, run):
    run(user)
    client.force_login(user)
    html = get(client, model="gpt-a", sort="-p")
    assert 'href="/runs/?model=gpt-a&amp;sort=p"' in html  # P is sorted descending: the header flips it
    assert 'href="/runs/?model=gpt-a&amp;sort=-cost"' in html


def test_pages_hold_25_runs_and_page_links_keep_the_filters(client, user, run):
    mine = [run(user, model="m1") for _ in range(30)]
    run(user, model="m2")
    client.force_login(user)
    first = get(client, model="m1", sort="created")
    assert listed(first) == [r.pk for r in reversed(mine)][:25]
    assert 'href="/runs/?model=m1&amp;sort=created&amp;page=2"' in first and "page 1 of 2" in first
    second = get(client, model="m1", sort="created", page=2)
    assert listed(second) == [r.pk for r in reversed(mine)][25:]
    assert 'href="/runs/?model=m1&amp;sort=created"' in second  # back to page 1: no page parameter


def test_filters_round_trip_through_the_url():
    choices = FilterChoices(task=(("vadd", "vadd"),), model=(("m", "m"),), owner=(("me", "me"),))
    filters = RunFilters(task="vadd", precision="bf16", model="m", status="failed", owner="me", sort="-p", page=3)
    query = filters.querystring()
    assert query == "task=vadd&precision=bf16&model=m&status=failed&owner=me&sort=-p&page=3"
    assert RunFilters.from_query(QueryDict(query), choices) == filters
    assert RunFilters().querystring() == ""


@pytest.mark.parametrize(
    "params, note",
    [
        ({"status": "exploded"}, "Ignored status='exploded'"),
        ({"page": "abc"}, "Ignored page='abc': not a page number"),
        ({"page": "-2"}, "Ignored page='-2'"),
        ({"sort": "random()"}, "Ignored sort='random()'"),
        ({"precision": "fp64"}, "Ignored precision='fp64'"),
        ({"task": "nosuch"}, "Ignored task='nosuch'"),
        ({"page": "99"}, "There is no page 99; showing the last page (1)"),
    ],
)
def test_bad_parameters_are_ignored_with_a_visible_note(client, user, run, params, note):
    mine = run(user)
    client.force_login(user)
    html = get(client, **params)
    assert listed(html) == [mine.pk]
    assert note.replace("'", "&#x27;") in html


def test_a_private_run_of_another_user_is_never_listed(client, user, other_user, run):
    hidden = run(other_user, best_score=9.0)
    shared = run(other_user, is_public=True)
    client.force_login(user)
    for params in ({}, {"owner": "bob"}, {"sort": "-p"}, {"model": "gpt-a"}, {"task": "vadd"}):
        assert hidden.pk not in listed(get(client, **params))
    assert listed(get(client, owner="bob")) == [shared.pk]


def test_an_owner_without_visible_runs_is_not_offered_and_is_ignored(client, user, other_user, run):
    run(other_user)  # private
    client.force_login(user)
    assert "bob" not in dict(filter_choices(user).owner)
    assert "Ignored owner=&#x27;bob&#x27;" in get(client, owner="bob")


def test_staff_may_filter_by_any_owner(client, user, other_user, run, admin_user):
    private = run(other_user)
    run(user)
    client.force_login(admin_user)
    assert listed(get(client, owner="bob")) == [private.pk]


def test_htmx_requests_get_only_the_results_and_history_restores_the_whole_page(client, user, run):
    mine = run(user, status=RunStatus.FAILED)
    client.force_login(user)
    response = client.get(reverse("runs:list"), {"status": "failed"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert "<html" not in html
    assert 'id="run-results"' in html and listed(html) == [mine.pk]
    assert "HX-Request" in response["Vary"]
    assert response["HX-Push-Url"] == "/runs/?status=failed"  # canonical: no empty fields from the form
    restore = client.get(reverse("runs:list"), HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert "<html" in restore.content.decode()


def test_the_page_works_without_javascript(client, user, run):
    run(user)
    client.force_login(user)
    html = get(client)
    form = re.search(r'<form method="get" action="/runs/"[^>]*>', html)
    assert form and 'hx-get="/runs/"' in form.group(0)  # a plain GET form, enhanced by htmx when present
    assert '<button type="submit">Filter</button>' in html
    assert "dist/kw-htmx.js" in html


def test_the_table_shows_tokens_cost_and_wall_time(client, user, run):
    made = run(user, tokens_in=12_000, tokens_out=400, cost_usd=Decimal("0.0421"), wall_time_s=192.4,
               best_score=2.345, status=RunStatus.SUCCEEDED)
    client.force_login(user)
    html = get(client)
    for text in (f'href="/runs/{made.pk}/"', ">vadd</a>", ">fp32<", "gpt-a", "status-succeeded", ">2.35<",
                 "12.4k", "$0.0421", "3m 12s", ">alice<"):
        assert text in html, text


def test_the_list_needs_a_bounded_number_of_queries(client, user, other_user, run, django_assert_max_num_queries):
    for i in range(40):
        run(user if i % 2 else other_user, ("vadd", "vadd_bf16", "mm")[i % 3], model=f"m{i % 4}",
            is_public=bool(i % 3), best_score=i / 10)
    client.force_login(user)
    # session, user, 3 for the selects, count, one page, the live workers (for the queued runs shown)
    with django_assert_max_num_queries(8):
        html = get(client, sort="-p")
    assert len(listed(html)) == 25


def test_number_formats():
    assert (duration(0), duration(42.3), duration(192), duration(7380)) == ("—", "42 s", "3m 12s", "2h 03m")
    assert (tokens(0), tokens(999), tokens(1234), tokens(2_500_000)) == ("—", "999", "1.2k", "2.5M")
    assert (usd(Decimal("0")), usd(Decimal("0.012345")), usd(Decimal("3.5")), usd("x")) == (
        "—", "$0.0123", "$3.50", "—")
