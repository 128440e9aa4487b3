"""Public showcase pages, share links and their views (thin: reads in showcase_selectors, writes in sharing).

The same templates render the live pages and the static export (showcase_export.py); `ShowcaseLinks`
says where their links point, server URLs here and relative file paths there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.runs.models import Turn
from apps.runs.selectors import run_for_user
from apps.showcase.selectors import (
    OperatorPage,
    ShowcaseCard,
    share_link,
    share_page,
    showcase_cards,
    showcase_operator,
    showcase_task_key,
    showcase_waiting,
)
from apps.showcase.sharing import share_create


@dataclass(frozen=True)
class ShowcaseLinks:
    layout: str  # the template the page extends
    index: str
    app_css: str
    showcase_css: str
    uplot_css: str
    charts_js: str
    exported: bool = False  # a static export has no server: no run viewer, no sign-in links
    code_css: str = ""  # the code view (static/css/codeview.css) and its CodeMirror bundle, for the diff
    editor_js: str = ""


def live_links() -> ShowcaseLinks:
    return ShowcaseLinks(
        layout="showcase/_showcase_live.html", index=reverse("showcase:index"), app_css=static("css/app.css"),
        showcase_css=static("css/showcase.css"), uplot_css=static("dist/uPlot.min.css"),
        charts_js=static("dist/kw-charts.js"), code_css=static("css/codeview.css"),
        editor_js=static("dist/kw-editor.js"),
    )


def operator_url(card: ShowcaseCard) -> str:
    return reverse("showcase:operator", args=[card.suite, card.operator, card.precision])


def index_context(cards: list[ShowcaseCard], links: ShowcaseLinks, href: Callable[[ShowcaseCard], str],
                  waiting=None) -> dict:
    return {"links": links, "entries": [(card, href(card)) for card in cards], "waiting": waiting}


def operator_context(page: OperatorPage, links: ShowcaseLinks, run_href: str | None) -> dict:
    return {"links": links, "page": page, "card": page.card, "run_href": run_href}


def showcase_index(request):
    return render(request, "showcase/showcase.html",
                  index_context(showcase_cards(), live_links(), operator_url, showcase_waiting()))


def showcase_operator_view(request, suite: str, operator: str, precision: str):
    page = showcase_operator(suite, operator, precision)
    if page is None:
        raise Http404("No public result for this operator yet.")
    run_href = reverse("runs:detail", args=[page.card.run_id])
    return render(request, "showcase/showcase_operator.html", operator_context(page, live_links(), run_href))


def showcase_operator_by_id(request, task_id: int):
    key = showcase_task_key(task_id)
    if key is None:
        raise Http404("No public result for this task yet.")
    return redirect("showcase:operator", *key, permanent=True)


@login_required
@require_POST
def share_create_view(request, pk: int):
    """POST a=<turn id>&b=<turn id>: freeze that comparison and go to its public page."""
    run = run_for_user(request.user, pk)
    try:
        ids = [int(request.POST["a"]), int(request.POST["b"])]
    except (KeyError, ValueError):
        raise Http404("Pick two turns of this run to share.") from None
    turns = {t.pk: t for t in Turn.objects.filter(run=run, pk__in=ids)} if run else {}
    if run is None or len(turns) != len(set(ids)):
        raise Http404("No such run or turn, or it is not shared with you.")
    try:
        link = share_create(request.user, run, turns[ids[0]], turns[ids[1]])
    except (PermissionDenied, ValueError):
        raise Http404("No such run or turn, or it is not shared with you.") from None
    return redirect("showcase:share", key=link.key)


def share_view(request, key: str):
    """The public page of a share link: only the snapshot, plus a run link for those who may see the run."""
    link = share_link(key)
    if link is None:
        raise Http404("No such share link.")
    page = share_page(link)
    can_see_run = link.run_id is not None and run_for_user(request.user, link.run_id) is not None
    context = {"links": live_links(), "page": page, "sides": (page.a, page.b),
               "run_id": link.run_id if can_see_run else None}
    return render(request, "showcase/share.html", context)
