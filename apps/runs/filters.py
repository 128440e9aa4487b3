"""The runs list's filters, sorting and paging: parsed from the URL into a typed value, applied to
`runs_visible_to(user)`, so ownership stays enforced in one place whatever the URL says.

Bad values never raise: they are dropped and named in `RunFilters.notes`, which the page shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import F, QuerySet
from django.http import QueryDict

from apps.catalog.models import Precision, Task
from apps.runs.models import Run, RunStatus
from apps.runs.selectors import runs_visible_to

PAGE_SIZE = 25
DEFAULT_SORT = "-created"
# P sorts keep runs without a score (queued, failed) last in both directions.
SORTS: dict[str, tuple[str, tuple]] = {
    "-created": ("Newest first", ("-created_at", "-id")),
    "created": ("Oldest first", ("created_at", "id")),
    "-p": ("Best P first", (F("best_score").desc(nulls_last=True), "-id")),
    "p": ("Lowest P first", (F("best_score").asc(nulls_last=True), "-id")),
    "-cost": ("Most expensive first", ("-cost_usd", "-id")),
    "cost": ("Cheapest first", ("cost_usd", "id")),
}
FILTER_NAMES = ("task", "suite", "category", "precision", "model", "status", "owner")

Choices = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class FilterChoices:
    """What each select offers: (value, label) pairs, drawn from what the user can see."""

    task: Choices = ()
    suite: Choices = ()
    category: Choices = ()
    precision: Choices = tuple(Precision.choices)
    model: Choices = ()
    status: Choices = tuple(RunStatus.choices)
    owner: Choices = ()
    sort: Choices = tuple((key, label) for key, (label, _) in SORTS.items())


def _pairs(values) -> Choices:
    return tuple((v, v) for v in sorted({v for v in values if v}))


def filter_choices(user) -> FilterChoices:
    """Three queries, however many runs there are."""
    visible = runs_visible_to(user).order_by()
    task_keys = list(Task.objects.order_by().values_list("operator", "suite", "category").distinct())
    models = visible.values_list("model", flat=True).distinct()
    owners = visible.values_list("owner__username", flat=True).distinct()
    return FilterChoices(
        task=_pairs(t[0] for t in task_keys),
        suite=_pairs(t[1] for t in task_keys),
        category=tuple((c, c.replace("_", " ")) for c, _ in _pairs(t[2] for t in task_keys)),
        model=_pairs(models),
        owner=((("me", "me"),) if user.is_authenticated else ()) + _pairs(owners),
    )


@dataclass(frozen=True)
class RunFilters:
    task: str = ""  # operator id (both precisions unless `precision` is set)
    suite: str = ""
    category: str = ""
    precision: str = ""
    model: str = ""
    status: str = ""
    owner: str = ""  # "me" or a username
    sort: str = DEFAULT_SORT
    page: int = 1
    notes: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def from_query(cls, query: QueryDict, choices: FilterChoices) -> RunFilters:
        values: dict[str, str | int] = {}
        notes: list[str] = []
        for name in (*FILTER_NAMES, "sort"):
            raw = query.get(name, "").strip()
            if not raw:
                continue
            allowed = {value for value, _ in getattr(choices, name)}
            if raw in allowed:
                values[name] = raw
            else:
                notes.append(f"Ignored {name}={raw[:80]!r}: not one of the values offered.")
        raw_page = query.get("page", "").strip()
        if raw_page:
            if raw_page.isdigit() and int(raw_page) >= 1:
                values["page"] = min(int(raw_page), 10**9)
            else:
                notes.append(f"Ignored page={raw_page[:20]!r}: not a page number; showing page 1.")
        return cls(**values, notes=tuple(notes))

    @property
    def active(self) -> dict[str, str]:
        """The filters that narrow the list (for the "clear" link and the summary)."""
        return {name: getattr(self, name) for name in FILTER_NAMES if getattr(self, name)}

    def querystring(self, **changes) -> str:
        """The URL query for these filters (defaults left out), with `changes` applied; page 1 is implicit."""
        state = replace(self, **changes) if changes else self
        defaults = RunFilters()
        pairs = [
            (f.name, getattr(state, f.name))
            for f in fields(self)
            if f.name != "notes" and getattr(state, f.name) != getattr(defaults, f.name)
        ]
        return urlencode(pairs)

    def sort_toggle(self, key: str) -> str:
        """Query for a column header: sort by `key` descending, or flip it when already sorted by it."""
        return self.querystring(sort=key.lstrip("-") if self.sort == f"-{key}" else f"-{key}", page=1)


def runs_filtered(user, filters: RunFilters) -> QuerySet[Run]:
    runs = runs_visible_to(user)
    if filters.task:
        runs = runs.filter(task__operator=filters.task)
    if filters.suite:
        runs = runs.filter(task__suite=filters.suite)
    if filters.category:
        runs = runs.filter(task__category=filters.category)
    if filters.precision:
        runs = runs.filter(task__precision=filters.precision)
    if filters.model:
        runs = runs.filter(model=filters.model)
    if filters.status:
        runs = runs.filter(status=filters.status)
    if filters.owner == "me":
        runs = runs.filter(owner=user)
    elif filters.owner:
        runs = runs.filter(owner__username=filters.owner)
    return runs.order_by(*SORTS[filters.sort][1])


@dataclass(frozen=True)
class RunListing:
    """Everything the runs list shows: the parsed filters, the select options, one page, the notes."""

    filters: RunFilters
    choices: FilterChoices
    page: Page
    notes: tuple[str, ...]

    @property
    def sort_links(self) -> dict[str, dict[str, str]]:
        """Per sortable column: the query that sorts by it (or flips it) and an arrow for the current sort."""
        links = {}
        for key in ("p", "cost", "created"):
            mark = "▼" if self.filters.sort == f"-{key}" else "▲" if self.filters.sort == key else ""
            links[key] = {"query": self.filters.sort_toggle(key), "mark": mark}
        return links

    @property
    def previous_query(self) -> str:
        return self.filters.querystring(page=self.page.previous_page_number()) if self.page.has_previous() else ""

    @property
    def next_query(self) -> str:
        return self.filters.querystring(page=self.page.next_page_number()) if self.page.has_next() else ""


def run_listing(user, query: QueryDict) -> RunListing:
    choices = filter_choices(user)
    filters = RunFilters.from_query(query, choices)
    paginator = Paginator(runs_filtered(user, filters), PAGE_SIZE)
    page = paginator.get_page(filters.page)
    notes = list(filters.notes)
    if filters.page > paginator.num_pages:
        notes.append(f"There is no page {filters.page}; showing the last page ({paginator.num_pages}).")
        filters = replace(filters, page=paginator.num_pages)
    return RunListing(filters, choices, page, tuple(notes))
