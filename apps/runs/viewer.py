"""What the trajectory viewer shows, computed from the database in a bounded number of queries.

The page is server-rendered (it works without JavaScript); the same functions feed the fragments
that htmx swaps in when a turn is selected and when live events arrive. Nothing here writes.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

from apps.catalog.markup import code_language
from apps.runs.codeview import (
    Diagnostic,
    LogLine,
    SideBySide,
    compile_diagnostics,
    compile_log_lines,
    highlight_lines,
    side_by_side,
)
from apps.runs.models import AgentCall, Bottleneck, Profile, Run, Turn, TurnAssembly, TurnKind
from apps.runs.peaks import Peaks, for_gpu
from apps.runs.roofline import SizePerf, roofline_data, size_perf
from apps.runs.sass import highlight_ptx, highlight_sass
from apps.runs.sizes import param_order, size_label
from worker.engine.assembly import ptx_line_map, sass_line_map

AGAINST = ("baseline", "parent", "best")
PENDING_VERDICTS = ("", "queued")  # not evaluated yet (a manual turn waits as "queued")
BOTTLENECK_SHORT = {Bottleneck.COMPUTE: "CB", Bottleneck.MEMORY_LATENCY: "ML", Bottleneck.MEMORY_BANDWIDTH: "MB"}


def turn_label(round_index: int, debug_index: int) -> str:
    return f"{round_index}.{debug_index}"


def parse_label(value: str | None) -> tuple[int, int] | None:
    match = re.fullmatch(r"(\d{1,4})\.(\d{1,3})", value or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def geomean(values: list[float]) -> float | None:
    positive = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in positive) / len(positive)) if positive else None


# ------------------------------------------------------------------------------------------ timeline


@dataclass(frozen=True)
class TurnItem:
    id: int
    label: str
    round_index: int
    debug_index: int
    kind: str
    verdict: str
    valid: bool
    score: float | None
    reason: str
    bottleneck: str
    is_best: bool

    @property
    def status(self) -> str:
        if self.verdict in PENDING_VERDICTS:
            return "pending"
        return "valid" if self.valid or (self.kind == TurnKind.BASELINE and self.verdict == "ok") else "invalid"

    @property
    def bottleneck_short(self) -> str:
        return BOTTLENECK_SHORT.get(self.bottleneck, "")


def timeline(run: Run) -> list[TurnItem]:
    """Every turn without its code and logs (2 queries, whatever the number of turns)."""
    fields = ("id", "run_id", "round_index", "debug_index", "kind", "verdict", "valid", "score", "reason")
    turns = list(run.turns.only(*fields).order_by("round_index", "debug_index"))
    classes: dict[int, Counter] = defaultdict(Counter)
    for turn_id, bottleneck in Profile.objects.filter(turn__run=run).values_list("turn_id", "bottleneck"):
        classes[turn_id][bottleneck] += 1
    return [
        TurnItem(t.id, turn_label(t.round_index, t.debug_index), t.round_index, t.debug_index, t.kind, t.verdict,
                 t.valid, t.score, t.reason,
                 classes[t.id].most_common(1)[0][0] if classes[t.id] else "", t.id == run.best_turn_id)
        for t in turns
    ]


# ------------------------------------------------------------------------------------------- charts


def chart_data(items: list[TurnItem], results: dict[int, list[dict]], order=()) -> dict[str, Any]:
    """JSON for kw-charts: P and best-so-far per turn, and speedup per size over turns (one line per size,
    with the library reference's speedup over the baseline where one was timed)."""
    best = None
    score_turns = []
    for item in items:
        if item.kind == TurnKind.BASELINE:
            continue
        score = item.score if item.valid else None
        if score is not None:
            best = score if best is None else max(best, score)
        score_turns.append({"label": item.label, "score": score, "best": best, "valid": item.valid})
    return {"score": {"turns": score_turns, "ylabel": "P (weighted speedup)"},
            "speedup": speedup_series(items, results, order)}


def speedup_series(items: list[TurnItem], results: dict[int, list[dict]], order=()) -> dict[str, Any]:
    """Per size: the speedup of every non-baseline turn (None where it failed or did not run), and the
    library reference's speedup over the baseline (baseline time / reference time) where it was measured."""
    baseline = next((results.get(i.id) for i in items if i.kind == TurnKind.BASELINE), None) or []
    labels = [size_label(r.get("params") or {}, order) for r in baseline]
    turns = [i for i in items if i.kind != TurnKind.BASELINE]

    def row_at(item: TurnItem, n: int) -> dict:
        return next((r for k, r in enumerate(results.get(item.id) or []) if r.get("index", k) == n), {})

    def reference(row: dict) -> float | None:
        ref_ms, base_ms = (row.get("reference") or {}).get("mean_ms"), (row.get("baseline") or {}).get("mean_ms")
        return base_ms / ref_ms if ref_ms and base_ms else None

    series = []
    for n, label in enumerate(labels):
        values = []
        for item in turns:
            speedup = row_at(item, n).get("speedup")
            values.append(speedup if item.valid and isinstance(speedup, int | float) and speedup > 0 else None)
        # The reference as timed beside the baseline, else beside the first turn that timed it.
        ref = reference(baseline[n]) or next((r for i in turns if (r := reference(row_at(i, n)))), None)
        series.append({"label": label, "values": values, "reference": ref})
    best_index = next((k for k, i in enumerate(turns) if i.is_best), None)
    return {"turns": [i.label for i in turns], "failed": [not i.valid for i in turns], "sizes": series,
            "best_index": best_index, "ylabel": "speedup over baseline (×, log scale)"}


def results_by_turn(run: Run) -> dict[int, list[dict]]:
    return dict(run.turns.values_list("id", "results"))


# ------------------------------------------------------------------------------------------- header


@dataclass(frozen=True)
class RunSummary:
    run: Run
    models: dict[str, str]
    best_label: str
    best_geomean: float | None
    turns: int
    valid_turns: int
    unpriced_calls: int = 0  # LLM calls without a price: the run's cost is then a lower bound, or unknown


def run_summary(run: Run, items: list[TurnItem], results: dict[int, list[dict]]) -> RunSummary:
    best = next((i for i in items if i.is_best), None)
    speedups = [r.get("speedup") for r in results.get(best.id, [])] if best else []
    models = {"all agents": run.model, **(run.agent_models or {})}
    unpriced = AgentCall.objects.filter(turn__run=run, priced=False).count()
    return RunSummary(run, models, best.label if best else "", geomean([s for s in speedups if s]),
                      sum(1 for i in items if i.kind != TurnKind.BASELINE), sum(1 for i in items if i.valid),
                      unpriced)


# ------------------------------------------------------------------------------------- selected turn


@dataclass(frozen=True)
class ResultRow:
    size: str
    complexity: float | None
    baseline_ms: float | None
    candidate_ms: float | None
    speedup: float | None
    cv: float | None
    correct: bool | None
    mismatch: str
    flags: list[str]
    reference_ms: float | None = None  # an expert reference timed beside it (torch.compile, a task.yaml's Ref time)
    expert: float | None = None  # t_ref / t_candidate


@dataclass(frozen=True)
class MetricRow:
    name: str
    unit: str
    value: Any
    pinned: Any
    delta_pct: float | None
    verdict: str  # better | worse | same | ""


@dataclass(frozen=True)
class ProfileBlock:
    size: str
    kernel: str
    bottleneck: str
    rows: list[MetricRow]
    full: dict[str, Any]


@dataclass
class TurnPanel:
    turn: Turn
    label: str
    against: str
    against_turn: Turn | None
    diff: SideBySide | None
    lines: list[SafeString]  # the turn's code alone, when there is nothing to compare with
    plan_html: SafeString
    log: list[LogLine]
    ptxas: list[dict]
    results: list[ResultRow]
    pinned_label: str
    profiles: list[ProfileBlock]
    calls: list[AgentCall]
    manual_code: str = ""
    links: dict[str, str] = field(default_factory=dict)
    assembly: AssemblyView | None = None
    perf: list[SizePerf] = field(default_factory=list)  # achieved bandwidth and FLOP/s per size
    roofline: dict[str, Any] = field(default_factory=dict)  # kw-charts `roofline` data
    peaks: Peaks | None = None

    @property
    def has_reference(self) -> bool:
        """Whether any size was timed against an expert reference (the Results tab shows its columns)."""
        return any(r.reference_ms is not None for r in self.results)

    @cached_property
    def diagnostics(self) -> list[Diagnostic]:
        """The compiler's errors and warnings on the turn's own lines (markers in the code view and editor)."""
        return compile_diagnostics(self.turn.compile_log)

    @property
    def diagnostics_json(self) -> list[dict]:
        return [d.as_json() for d in self.diagnostics]

    @property
    def error_lines(self) -> set[int]:
        return {d.line for d in self.diagnostics}

    @property
    def pending(self) -> bool:
        """Not evaluated yet: the page follows it live until its verdict arrives."""
        return self.turn.verdict in PENDING_VERDICTS


BANDS = 8  # colour bands cycled over source lines, as Compiler Explorer does


@dataclass(frozen=True)
class AsmLine:
    """One shown line of a listing or of the source, with the source line it maps to and its colour band."""

    html: SafeString
    source: int | None = None
    band: int | None = None


@dataclass
class AssemblyView:
    """A turn's source beside its PTX and SASS, line-mapped (loaded only for the selected turn)."""

    source: list[AsmLine]
    ptx: list[AsmLine]
    sass: list[AsmLine]
    note: str
    kernels: list[str]  # SASS function names, in order, for the jump list
    resources: list[dict]  # ptxas -v per kernel: registers, spills, shared memory, stack
    mapped: bool  # whether any instruction carries a source line (the build had -lineinfo)


def _mapped(lines: list[SafeString], source: tuple[int | None, ...]) -> list[AsmLine]:
    return [AsmLine(html, n, n % BANDS if n is not None else None) for html, n in zip(lines, source, strict=True)]


def assembly_view(turn: Turn, language: str = "cuda") -> AssemblyView | None:
    stored = TurnAssembly.objects.filter(turn=turn).first()
    if stored is None:
        return None
    sass = sass_line_map(stored.sass)
    ptx = ptx_line_map(stored.ptx)
    used = {n for n in (*sass.source, *ptx.source) if n is not None}
    code = highlight_lines(turn.code, language) if turn.code else []
    source = [AsmLine(html, n, n % BANDS if n in used else None) for n, html in enumerate(code, start=1)]
    kernels = [line.split("Function :", 1)[1].strip() for line in sass.lines if "Function :" in line]
    return AssemblyView(
        source=source,
        ptx=_mapped(highlight_ptx(ptx.lines), ptx.source),
        sass=_mapped(highlight_sass(sass.lines), sass.source),
        note=stored.note, kernels=kernels, resources=list((turn.ptxas or {}).get("kernels") or []),
        mapped=sass.mapped or ptx.mapped)


_SANITIZE_TAGS = {"p", "ul", "ol", "li", "code", "pre", "em", "strong", "a", "h3", "h4", "blockquote", "br",
                  "table", "thead", "tbody", "tr", "th", "td"}


def render_markdown(text: str) -> SafeString:
    """LLM text as Markdown, then sanitized: no raw HTML, scripts, handlers or javascript: links survive."""
    html = markdown.markdown(text or "", extensions=["fenced_code", "tables"], output_format="html")
    clean = nh3.clean(html, tags=_SANITIZE_TAGS, attributes={"a": {"href", "title"}},
                      url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer nofollow")
    return mark_safe(clean)  # noqa: S308 - sanitized by nh3 just above


# Which direction is an improvement, by metric name; unknown metrics are shown without a colour.
_LOWER_IS_BETTER = re.compile(r"duration|cycles|spill|stall|latency|conflict|registers", re.I)
_HIGHER_IS_BETTER = re.compile(r"throughput|hit rate|ipc|occupancy|busy|utilization|efficiency|bandwidth", re.I)


def metric_verdict(name: str, value: Any, pinned: Any) -> tuple[float | None, str]:
    if not isinstance(value, int | float) or not isinstance(pinned, int | float):
        return None, ""
    if pinned == value:
        return 0.0, "same"
    delta = (value - pinned) / abs(pinned) * 100 if pinned else None
    if _LOWER_IS_BETTER.search(name):
        return delta, "better" if value < pinned else "worse"
    if _HIGHER_IS_BETTER.search(name):
        return delta, "better" if value > pinned else "worse"
    return delta, ""


def _value(metric: Any) -> tuple[Any, str]:
    if isinstance(metric, dict):
        return metric.get("value"), metric.get("unit", "")
    return metric, ""


def profile_blocks(turn: Turn, pinned: Turn | None, order=()) -> list[ProfileBlock]:
    """The turn's filtered metrics per size and kernel, each beside the pinned turn's value at that size.

    Kernel names differ between turns (`x_kernel` → `x_kernel_optimized`), so kernels are paired
    by size and position."""
    mine = list(turn.profiles.all())
    theirs: dict[int, list[Profile]] = defaultdict(list)
    if pinned is not None and pinned.pk != turn.pk:
        for p in pinned.profiles.all():
            theirs[p.size_index].append(p)
    position: Counter = Counter()
    blocks = []
    for p in mine:
        n = position[p.size_index]
        position[p.size_index] += 1
        other = theirs[p.size_index][n] if n < len(theirs[p.size_index]) else None
        rows = []
        for name, metric in (p.filtered_metrics or {}).items():
            value, unit = _value(metric)
            pinned_value = _value((other.filtered_metrics or {}).get(name) or
                                  _find_full(other.full_metrics, name))[0] if other else None
            delta, verdict = metric_verdict(name, value, pinned_value)
            rows.append(MetricRow(name, unit, value, pinned_value, delta, verdict))
        blocks.append(ProfileBlock(size_label(p.size, order), p.kernel, p.get_bottleneck_display(), rows,
                                   p.full_metrics))
    return blocks


def _find_full(full: dict, name: str) -> Any:
    for section in (full or {}).values():
        if isinstance(section, dict) and name in section:
            return section[name]
    return None


def result_rows(results: list[dict], order=()) -> list[ResultRow]:
    rows = []
    for r in results or []:
        baseline, candidate = r.get("baseline") or {}, r.get("candidate") or {}
        mismatch = r.get("first_mismatch")
        if isinstance(mismatch, dict):
            mismatch = ", ".join(f"{k}={v}" for k, v in mismatch.items())
        rows.append(ResultRow(
            size_label(r.get("params") or {}, order), r.get("complexity"), baseline.get("mean_ms"),
            candidate.get("mean_ms"),
            r.get("speedup"), (candidate or baseline).get("cv"), r.get("correct"), mismatch or "",
            list(r.get("flags") or []), (r.get("reference") or {}).get("mean_ms"), r.get("reference_speedup"),
        ))
    return rows


def _anchor_turn(run: Run, turn: Turn, against: str) -> Turn | None:
    if against == "parent":
        return turn.parent
    if against == "best":
        return run.best_turn if run.best_turn_id and run.best_turn_id != turn.pk else None
    return run.turns.filter(round_index=0, debug_index=0).exclude(pk=turn.pk).first()


def turn_panel(run: Run, turn: Turn, *, against: str = "baseline", pin: tuple[int, int] | None = None) -> TurnPanel:
    against = against if against in AGAINST else "baseline"
    other = _anchor_turn(run, turn, against)
    language = code_language(run.task.backend)
    diff = side_by_side(other.code, turn.code, language=language) if other is not None else None
    pinned = run.turns.filter(round_index=pin[0], debug_index=pin[1]).first() if pin else None
    if pinned is None:
        pinned = run.turns.filter(round_index=0, debug_index=0).first()
    ptxas = (turn.ptxas or {}).get("kernels") or []
    order = param_order(run.task)
    return TurnPanel(
        turn=turn, label=turn_label(turn.round_index, turn.debug_index), against=against, against_turn=other,
        diff=diff, lines=[] if diff else highlight_lines(turn.code, language), plan_html=render_markdown(turn.scheme),
        log=compile_log_lines(turn.compile_log), ptxas=ptxas, results=result_rows(turn.results, order),
        pinned_label=turn_label(pinned.round_index, pinned.debug_index) if pinned else "",
        profiles=profile_blocks(turn, pinned, order), calls=list(turn.agent_calls.all()), manual_code=turn.code,
        assembly=assembly_view(turn, language), **performance(run, turn, order),
    )


def performance(run: Run, turn: Turn, order=()) -> dict[str, Any]:
    """The turn's achieved bandwidth and FLOP/s per size against the GPU's peaks, and its roofline."""
    profiles: dict[int, list[dict]] = defaultdict(list)
    for p in turn.profiles.all():
        profiles[p.size_index].append({**(p.full_metrics or {}), **(p.filtered_metrics or {})})
    labels = {r.get("index", n): size_label(r.get("params") or {}, order) for n, r in enumerate(turn.results or [])}
    gpu = run.gpu_name or next((p.gpu_name for p in turn.profiles.all() if p.gpu_name), "")
    peaks = for_gpu(gpu)
    perf = size_perf(run.task, run.task.precision, turn.results, profiles, peaks, labels,
                     baseline=turn.kind == TurnKind.BASELINE)
    label = turn_label(turn.round_index, turn.debug_index)
    side = "baseline" if turn.kind == TurnKind.BASELINE else "candidate"
    timed = any((r.get(side) or {}).get("mean_ms") for r in turn.results or [])
    return {"perf": perf, "peaks": peaks, "roofline": roofline_data(gpu, run.task.precision, perf, label, timed)}


def select_turn(run: Run, label: str | None) -> Turn | None:
    """The turn named in the URL, else the best, else the latest."""
    wanted = parse_label(label)
    turns = run.turns.select_related("parent")
    if wanted:
        found = turns.filter(round_index=wanted[0], debug_index=wanted[1]).first()
        if found:
            return found
    if run.best_turn_id:
        return turns.filter(pk=run.best_turn_id).first()
    return turns.order_by("-round_index", "-debug_index").first()
