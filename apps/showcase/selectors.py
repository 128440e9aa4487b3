"""Reads for the public showcase and share pages: typed, template-ready results.

Everything here is public by design: only runs marked public, succeeded, with a valid best turn at least
SHOWCASE_MIN_SPEEDUP fast, verified in a fresh evaluation (apps/runs/verification.py; unless
SHOWCASE_REQUIRE_VERIFIED is off) and of a task an admin has not hidden reach the showcase, and a share
page shows only its frozen snapshot. Query counts are fixed (no
per-card or per-size queries), so the pages stay cheap however many operators there are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import zip_longest

from django.conf import settings
from django.db.models import Case, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, When

from apps.catalog.markup import code_language
from apps.catalog.models import ShowcasePlacement
from apps.runs.codeview import SideBySide, side_by_side
from apps.runs.models import Run, RunEvent, RunStatus, Turn, TurnKind
from apps.runs.sizes import num_text, param_order, size_label
from apps.runs.verification import VerificationState, verification_states, verified_status_subquery
from apps.showcase.models import ShareLink

# Fields of the worker's toolchain description that are safe to publish (no host names or paths), labelled.
PUBLIC_TOOLCHAIN = {"nvcc_version": "nvcc", "ncu_version": "Nsight Compute", "arch": "target architecture"}


# ---- per-size measurements ----------------------------------------------------------------------------


def _finite(value) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def geomean(values) -> float | None:
    """Geometric mean of the positive finite values; None when there are none."""
    logs = [math.log(v) for v in (_finite(x) for x in values) if v is not None and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def turn_label(turn: Turn) -> str:
    if turn.kind == TurnKind.BASELINE or (turn.round_index == 0 and turn.debug_index == 0):
        return "baseline"
    label = f"round {turn.round_index}"
    if turn.debug_index:
        label += f".{turn.debug_index}"
    return f"{label} ({turn.kind})"


def turn_measurements(turn: Turn) -> list[dict]:
    """The turn's own timing per size, in the plain-JSON shape a share snapshot stores.

    A baseline turn times the baseline; every other turn times its candidate (the baseline timing it
    also carries is the reference for `speedup`).
    """
    own = "baseline" if turn.kind == TurnKind.BASELINE else "candidate"
    out = []
    for result in turn.results or []:
        timing = result.get(own) or {}
        out.append({
            "params": result.get("params") or {},
            "complexity": _finite(result.get("complexity")),
            "correct": result.get("correct"),
            "mean_ms": _finite(timing.get("mean_ms")),
            "median_ms": _finite(timing.get("median_ms")),
            "cv": _finite(timing.get("cv")),
            "speedup": _finite(result.get("speedup")) if own == "candidate" else 1.0,
            "flags": [str(f) for f in result.get("flags") or []],
        })
    return out


@dataclass(frozen=True)
class SizeRow:
    """One size of a before/after comparison; times are means in ms, speedup = before / after."""

    label: str
    complexity: float | None
    before_ms: float | None
    after_ms: float | None
    speedup: float | None
    before_cv: float | None
    after_cv: float | None
    correct: bool | None
    flags: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """The later code gave no valid time here (a missing earlier time only leaves the speedup blank)."""
        return self.correct is False or self.after_ms is None

    @property
    def before_cv_pct(self) -> float | None:
        return None if self.before_cv is None else 100 * self.before_cv

    @property
    def after_cv_pct(self) -> float | None:
        return None if self.after_cv is None else 100 * self.after_cv


def _best_turn_rows(results: list[dict], order=()) -> list[SizeRow]:
    # The best turn carries the baseline timing its speedup was computed against: use that pair.
    rows = []
    for r in results:
        before, after = r.get("baseline") or {}, r.get("candidate") or {}
        rows.append(SizeRow(
            label=size_label(r.get("params") or {}, order), complexity=_finite(r.get("complexity")),
            before_ms=_finite(before.get("mean_ms")), after_ms=_finite(after.get("mean_ms")),
            speedup=_finite(r.get("speedup")), before_cv=_finite(before.get("cv")), after_cv=_finite(after.get("cv")),
            correct=r.get("correct"), flags=tuple(str(f) for f in r.get("flags") or []),
        ))
    return rows


def compare_measurements(before: list[dict], after: list[dict], order=()) -> list[SizeRow]:
    """Pair two snapshots' sizes by position (same task, same size list) and divide their times."""
    rows = []
    for a, b in zip_longest(before, after, fillvalue={}):
        a_ms, b_ms = a.get("mean_ms"), b.get("mean_ms")
        rows.append(SizeRow(
            label=size_label(b.get("params") or a.get("params") or {}, order),
            complexity=b.get("complexity") or a.get("complexity"),
            before_ms=a_ms, after_ms=b_ms, speedup=a_ms / b_ms if a_ms and b_ms else None,
            before_cv=a.get("cv"), after_cv=b.get("cv"), correct=b.get("correct"),
            flags=tuple(b.get("flags") or ()),
        ))
    return rows


def speedup_chart(rows: list[SizeRow], title: str = "speedup per size") -> dict:
    """kw-charts `size-strips` data drawn as a single strip whose x axis is the sizes."""
    return {
        "sizes": [title],
        "turns": [{"label": row.label, "speedups": [row.speedup], "failed": [row.failed]} for row in rows],
    }


# ---- the showcase ----------------------------------------------------------------------------------------


def showcase_runs() -> QuerySet[Run]:
    """Runs eligible for the public showcase: public, succeeded, with a valid best turn whose P reaches
    SHOWCASE_MIN_SPEEDUP (a best turn that is the baseline, or slower, is no result), of a task not
    hidden by an admin, verified by a fresh evaluation (unless SHOWCASE_REQUIRE_VERIFIED is off, as in
    development, where unverified results show with that label) and never contradicted by one."""
    runs = Run.objects.filter(
        is_public=True, status=RunStatus.SUCCEEDED, best_turn__valid=True, best_score__isnull=False,
        best_score__gte=settings.SHOWCASE_MIN_SPEEDUP,
    ).exclude(task__showcase=ShowcasePlacement.HIDDEN)
    runs = runs.annotate(verification=verified_status_subquery())
    if settings.SHOWCASE_REQUIRE_VERIFIED:
        return runs.filter(verification="verified")
    # Unverified results may be shown (development), labelled so; a contradicted one never is.
    return runs.filter(Q(verification__isnull=True) | ~Q(verification="disagrees"))


def _best_per_task() -> QuerySet[Run]:
    best = showcase_runs().filter(task=OuterRef("task")).order_by("-best_score", "-pk").values("pk")[:1]
    return (
        showcase_runs()
        .filter(pk=Subquery(best))
        .select_related("task", "best_turn")
        .defer("best_turn__code", "best_turn__compile_log", "best_turn__scheme", "best_turn__ptxas",
               "task__description", "task__baseline_source")
    )


@dataclass(frozen=True)
class ShowcaseCard:
    run_id: int
    task_id: int
    suite: str
    operator: str
    precision: str
    title: str
    category: str
    best_score: float
    geomean_speedup: float | None
    gpu_name: str
    sizes: int
    verification: VerificationState
    featured: bool = False


def _card(run: Run, verification: VerificationState) -> ShowcaseCard:
    task, results = run.task, run.best_turn.results or []
    return ShowcaseCard(
        run_id=run.pk, task_id=task.pk, suite=task.suite, operator=task.operator, precision=task.precision,
        title=task.title, category=task.category, best_score=run.best_score,
        geomean_speedup=geomean(r.get("speedup") for r in results), gpu_name=run.gpu_name, sizes=len(results),
        verification=verification, featured=task.showcase == ShowcasePlacement.FEATURED,
    )


def showcase_cards() -> list[ShowcaseCard]:
    """One card per operator × precision: its best eligible run, featured tasks first (two queries)."""
    featured_first = Case(When(task__showcase=ShowcasePlacement.FEATURED, then=Value(0)), default=Value(1),
                          output_field=IntegerField())
    runs = list(_best_per_task().order_by(featured_first, "task__category", "task__operator",
                                          "task__precision", "task__suite"))
    states = verification_states(run.best_turn_id for run in runs)
    return [_card(run, states[run.best_turn_id]) for run in runs]


@dataclass(frozen=True)
class ShowcaseWaiting:
    """Why the showcase may be shorter than the catalog of public results: said on the page."""

    awaiting_verification: int  # eligible but not (yet) verified
    disagreeing: int  # a fresh evaluation contradicted the record
    below_threshold: int  # correct, but slower than SHOWCASE_MIN_SPEEDUP
    min_speedup: float
    require_verified: bool

    @property
    def sentence(self) -> str:
        """'Not shown: …' in words, or '' when nothing is left off."""
        parts = []
        if self.awaiting_verification:
            n = self.awaiting_verification
            parts.append(f"{n} public result{'s' if n != 1 else ''} awaiting verification on a GPU worker")
        if self.disagreeing:
            parts.append(f"{self.disagreeing} whose verification disagreed with the record")
        if self.below_threshold:
            parts.append(f"{self.below_threshold} below the {self.min_speedup:.2f}× threshold")
        return f"Not shown: {'; '.join(parts)}." if parts else ""


def showcase_waiting() -> ShowcaseWaiting:
    """Counts of public best results left off the showcase, by reason (three queries)."""
    public = Run.objects.filter(is_public=True, status=RunStatus.SUCCEEDED, best_turn__valid=True,
                                best_score__isnull=False).exclude(task__showcase=ShowcasePlacement.HIDDEN)
    fast = public.filter(best_score__gte=settings.SHOWCASE_MIN_SPEEDUP).annotate(
        verification=verified_status_subquery())
    awaiting = 0
    if settings.SHOWCASE_REQUIRE_VERIFIED:
        awaiting = (fast.filter(Q(verification__isnull=True) | ~Q(verification__in=["verified", "disagrees"]))
                    .values("task").distinct().count())
    disagreeing = fast.filter(verification="disagrees").values("task").distinct().count()
    below = (public.filter(best_score__lt=settings.SHOWCASE_MIN_SPEEDUP)
             .exclude(task__in=fast.values("task")).values("task").distinct().count())
    return ShowcaseWaiting(awaiting, disagreeing, below, settings.SHOWCASE_MIN_SPEEDUP,
                           settings.SHOWCASE_REQUIRE_VERIFIED)


@dataclass(frozen=True)
class OperatorPage:
    card: ShowcaseCard
    complexity: str
    baseline_label: str
    best_label: str
    diff: SideBySide
    sizes: list[SizeRow]
    chart: dict
    compile_command: str
    config: list[tuple[str, str]]
    toolchain: list[tuple[str, str]] = field(default_factory=list)


def _config(run: Run) -> list[tuple[str, str]]:
    rows = [("model", run.model or "—")]
    rows += [(f"model ({role})", model) for role, model in sorted((run.agent_models or {}).items())]
    rows += [
        ("rounds R", str(run.rounds)), ("debug rounds D", str(run.debug_rounds)),
        ("profiling", run.get_profile_mode_display()), ("timing", run.get_timing_protocol_display()),
        ("temperature", num_text(run.temperature)),
        ("seed", "—" if run.seed is None else str(run.seed)),
    ]
    return rows


def _toolchain(run: Run) -> list[tuple[str, str]]:
    info = (
        RunEvent.objects.filter(run=run, type="worker.info").order_by("-seq").values_list("payload", flat=True).first()
    ) or {}
    return [(label, str(info[key])) for key, label in PUBLIC_TOOLCHAIN.items() if info.get(key)]


def showcase_operator(suite: str, operator: str, precision: str) -> OperatorPage | None:
    """The operator's best eligible run, original versus optimized (three queries)."""
    run = (
        showcase_runs()
        .filter(task__suite=suite, task__operator=operator, task__precision=precision)
        .select_related("task", "best_turn")
        .order_by("-best_score", "-pk")
        .first()
    )
    if run is None:
        return None
    best = run.best_turn
    baseline = run.turns.filter(round_index=0, debug_index=0).first()
    original = baseline.code if baseline and baseline.code else run.task.baseline_source
    rows = _best_turn_rows(best.results or [], param_order(run.task))
    return OperatorPage(
        card=_card(run, verification_states([best.pk])[best.pk]), complexity=run.task.complexity,
        baseline_label=turn_label(baseline) if baseline else "baseline", best_label=turn_label(best),
        diff=side_by_side(original, best.code, language=code_language(run.task.backend)), sizes=rows,
        chart=speedup_chart(rows),
        compile_command=best.compile_command, config=_config(run), toolchain=_toolchain(run),
    )


def showcase_task_key(task_id: int) -> tuple[str, str, str] | None:
    """(suite, operator, precision) of a task id that has a showcase entry, for the canonical URL."""
    run = showcase_runs().filter(task_id=task_id).select_related("task").only(
        "task__suite", "task__operator", "task__precision").first()
    return (run.task.suite, run.task.operator, run.task.precision) if run else None


# ---- share pages -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SharedTurn:
    label: str
    verdict: str
    score: float | None
    valid: bool


@dataclass(frozen=True)
class SharePage:
    key: str
    task: dict
    gpu: str
    run_id: int | None
    a: SharedTurn
    b: SharedTurn
    diff: SideBySide
    sizes: list[SizeRow]
    chart: dict
    created_at: object


def share_link(key: str) -> ShareLink | None:
    return ShareLink.objects.filter(key=key).first()


def _shared_turn(data: dict, default: str) -> SharedTurn:
    return SharedTurn(label=data.get("label") or default, verdict=data.get("verdict") or "",
                      score=data.get("score"), valid=bool(data.get("valid")))


def share_page(link: ShareLink) -> SharePage:
    """Everything the share page shows, read only from the frozen snapshot (never from the run)."""
    snap = link.snapshot
    a, b = snap["a"], snap["b"]
    rows = compare_measurements(a.get("sizes") or [], b.get("sizes") or [], (snap.get("task") or {}).get("params", ()))
    return SharePage(
        key=link.key, task=snap.get("task") or {}, gpu=snap.get("gpu") or "", run_id=snap.get("run"),
        a=_shared_turn(a, "A"), b=_shared_turn(b, "B"),
        diff=side_by_side(a.get("code", ""), b.get("code", ""),
                          language=code_language((snap.get("task") or {}).get("backend", "cuda"))),
        sizes=rows, chart=speedup_chart(rows, f"speedup of {b.get('label', 'B')} over {a.get('label', 'A')}"),
        created_at=link.created_at,
    )
