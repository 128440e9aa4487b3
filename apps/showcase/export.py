"""Write the showcase as static HTML that opens from the file system (manage.py export_showcase).

Same templates as the live pages, with the export layout and relative links; the CSS and the chart
bundle are copied next to the pages, so nothing points at a server or a CDN.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils import timezone

from apps.showcase.selectors import ShowcaseCard, showcase_cards, showcase_operator, showcase_waiting
from apps.showcase.views import ShowcaseLinks, index_context, operator_context

# static path (as {% static %} names it) -> where it lands under the export directory
ASSETS = {
    "css/app.css": "static/css/app.css",
    "css/showcase.css": "static/css/showcase.css",
    "dist/uPlot.min.css": "static/dist/uPlot.min.css",
    "dist/kw-charts.js": "static/dist/kw-charts.js",
    "css/codeview.css": "static/css/codeview.css",
    "dist/kw-editor.js": "static/dist/kw-editor.js",
}

EXPORT_LINKS = ShowcaseLinks(
    layout="showcase/_showcase_export.html", index="index.html", app_css=ASSETS["css/app.css"],
    showcase_css=ASSETS["css/showcase.css"], uplot_css=ASSETS["dist/uPlot.min.css"],
    charts_js=ASSETS["dist/kw-charts.js"], exported=True, code_css=ASSETS["css/codeview.css"],
    editor_js=ASSETS["dist/kw-editor.js"],
)


class ExportError(Exception):
    """The export cannot be written; the message says why and what to do."""


@dataclass(frozen=True)
class ExportResult:
    out_dir: Path
    pages: list[Path]
    assets: list[Path]


def page_filename(card: ShowcaseCard) -> str:
    """A flat, file-system-safe name: every page sits next to index.html, so links need no `../`."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{card.suite}--{card.operator}--{card.precision}") + ".html"


def _check_out_dir(out_dir: Path, force: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(f"{out_dir} exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise ExportError(
            f"{out_dir} is not empty; choose an empty or new directory, or pass --force to write over its files"
        )


def _find_assets() -> dict[str, Path]:
    found, missing = {}, []
    for name in ASSETS:
        path = finders.find(name)
        if path:
            found[name] = Path(path)
        else:
            missing.append(name)
    if missing:
        raise ExportError(
            f"static files not found: {', '.join(missing)}; build the bundle with `make static/dist/.built`"
        )
    return found


def showcase_export(
    out_dir: Path, *, force: bool = False, progress: Callable[[Iterable], Iterable] = lambda items: items
) -> ExportResult:
    out_dir = Path(out_dir)
    _check_out_dir(out_dir, force)
    sources = _find_assets()  # before writing anything: a missing bundle leaves no half export
    cards = showcase_cards()
    out_dir.mkdir(parents=True, exist_ok=True)
    extra = {"exported_at": timezone.now()}

    assets = []
    for name, source in sources.items():
        target = out_dir / ASSETS[name]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        assets.append(target)

    pages, shown = [], []
    for card in progress(cards):
        page = showcase_operator(card.suite, card.operator, card.precision)
        if page is None:  # made private or deleted since the cards were read: leave it out of the index too
            continue
        target = out_dir / page_filename(card)
        context = {**operator_context(page, EXPORT_LINKS, run_href=None), **extra}
        target.write_text(render_to_string("showcase/showcase_operator.html", context), encoding="utf-8")
        pages.append(target)
        shown.append(card)
    index = out_dir / EXPORT_LINKS.index
    context = {**index_context(shown, EXPORT_LINKS, page_filename, showcase_waiting()), **extra}
    index.write_text(render_to_string("showcase/showcase.html", context), encoding="utf-8")
    pages.insert(0, index)
    return ExportResult(out_dir, pages, assets)
