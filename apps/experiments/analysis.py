"""The experiment analyses, as pure functions over plain typed values: no ORM, no settings.

Every function takes `TaskOutcome`s (one per task and seed: one *trial*) and returns a frozen
dataclass. `apps.experiments.selectors.outcomes_for` builds the outcomes from the database, including
a `missing` outcome for every (task, seed) without a run, so failures and missing tasks are counted in
every denominator. docs/experiments.md gives the definitions and formulas.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

TAUS: tuple[float, ...] = (0, 1, 2, 4, 8, 16, 32)  # CUDAMaster Figure 4 / Table 3
PS: tuple[float, ...] = (0, 0.5, 0.8, 1, 1.5, 2)  # KernelBench fast_p
ROLES: tuple[str, ...] = ("planner", "coder", "compiler", "debug")
# Bottleneck classes as the engine stores them (apps.runs.models.Bottleneck), in the paper's order.
CLASSES: tuple[str, ...] = ("compute_bound", "memory_latency_bound", "memory_bandwidth_bound")
UNKNOWN_CLASS = "unknown"
MISSING = "missing"  # the status of a (task, seed) that has no run


# ---------------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class TaskOutcome:
    """What one trial (a task under one seed) delivered.

    `correct`: the run succeeded and produced a valid generated candidate (not the baseline).
    `score`: P of the best valid candidate (complexity-weighted speedup, paper eq. 2), None unless correct.
    `speedups`: that candidate's speedup per size, in size order.
    `reference_score` / `reference_speedups`: the library reference's P and per-size speedups over the
    same naive baseline, where the task has one.
    """

    task_id: int
    operator: str
    precision: str
    category: str = ""
    seed_index: int = 0
    status: str = "succeeded"
    correct: bool = False
    score: float | None = None
    speedups: tuple[float | None, ...] = ()
    baseline_class: str = ""
    best_class: str = ""
    reference_score: float | None = None
    reference_speedups: tuple[float | None, ...] = ()
    tokens: int = 0
    cost_usd: float = 0.0
    tokens_by_role: Mapping[str, int] = field(default_factory=dict)
    cost_by_role: Mapping[str, float] = field(default_factory=dict)
    run_id: int | None = None
    error: str = ""

    @property
    def key(self) -> tuple[int, int]:
        return (self.task_id, self.seed_index)

    @property
    def is_missing(self) -> bool:
        return self.status == MISSING

    @property
    def speedup(self) -> float | None:
        """The trial's single speedup for fast_p and the geometric mean: the geometric mean of the best
        candidate's per-size speedups (every size weighs the same), or P when no per-size speedups are
        known. None unless correct."""
        if not self.correct:
            return None
        return geomean([s for s in self.speedups if s is not None]) or self.score


def missing_outcome(task_id: int, operator: str, precision: str, category: str = "", seed_index: int = 0,
                    reference_score: float | None = None) -> TaskOutcome:
    """A (task, seed) of the experiment without a run: a failure with no cost."""
    return TaskOutcome(task_id, operator, precision, category, seed_index, status=MISSING,
                       reference_score=reference_score, error="no run for this task")


def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean of the positive values; None when there are none. Equal values (one value too) come
    back as they are: exp(log(x)) need not give x, and a speedup exactly at a threshold must stay exact."""
    positive = [v for v in values if v is not None and v > 0]
    if positive and len(set(positive)) == 1:
        return positive[0]
    return math.exp(sum(math.log(v) for v in positive) / len(positive)) if positive else None


def _rate(count: int, total: int) -> float:
    return count / total if total else 0.0


def _universe(outcomes: Iterable[TaskOutcome], all_task_ids: Iterable[int] | None, seeds: int) -> tuple[
        dict[tuple[int, int], TaskOutcome], int]:
    """The trials to count: one per (task, seed) of `all_task_ids` × range(seeds) when given (missing
    ones count as failures, outcomes of other tasks are ignored), else one per distinct outcome key.
    A duplicate key keeps its last outcome."""
    by_key = {o.key: o for o in outcomes}
    if all_task_ids is None:
        return by_key, len(by_key)
    expected = {(t, s) for t in set(all_task_ids) for s in range(max(seeds, 1))}
    return {k: o for k, o in by_key.items() if k in expected}, len(expected)


# ----------------------------------------------------------------------- cumulative success (Figure 4)


@dataclass(frozen=True)
class CurveSeries:
    label: str  # "all" or a precision
    total: int
    counts: tuple[int, ...]  # per tau: trials with a correct candidate and P > tau

    @property
    def rates(self) -> tuple[float, ...]:
        return tuple(_rate(c, self.total) for c in self.counts)


@dataclass(frozen=True)
class SuccessCurve:
    taus: tuple[float, ...]
    series: tuple[CurveSeries, ...]  # "all" first, then one per precision (sorted)

    def get(self, label: str) -> CurveSeries | None:
        return next((s for s in self.series if s.label == label), None)


def success_curve(outcomes: Sequence[TaskOutcome], taus: Sequence[float] = TAUS) -> SuccessCurve:
    """Cumulative success rate per threshold: the share of trials whose best candidate is correct and
    whose P exceeds tau (strictly, so P = tau exactly is not a success), over all trials including
    failed and missing ones; for all precisions together and per precision."""
    taus = tuple(taus)

    def series(label: str, group: list[TaskOutcome]) -> CurveSeries:
        counts = tuple(sum(1 for o in group if o.correct and o.score is not None and o.score > tau) for tau in taus)
        return CurveSeries(label, len(group), counts)

    outcomes = list(outcomes)
    precisions = sorted({o.precision for o in outcomes})
    return SuccessCurve(taus, (series("all", outcomes),
                               *(series(p, [o for o in outcomes if o.precision == p]) for p in precisions)))


# ------------------------------------------------------------------------------------ fast_p (KernelBench)


@dataclass(frozen=True)
class FastP:
    ps: tuple[float, ...]
    total: int  # trials counted (the denominator), failed and missing ones included
    counts: tuple[int, ...]  # per p: correct and speedup > p

    @property
    def values(self) -> tuple[float, ...]:
        return tuple(_rate(c, self.total) for c in self.counts)

    def at(self, p: float) -> float:
        return self.values[self.ps.index(p)]


def fast_p(outcomes: Iterable[TaskOutcome], ps: Sequence[float] = PS, all_task_ids: Iterable[int] | None = None,
           seeds: int = 1) -> FastP:
    """fast_p = (1/N) Σ 1(correct_i ∧ speedup_i > p), KernelBench's definition, over N trials: every
    (task, seed) of `all_task_ids` × range(seeds) when given, so tasks without an outcome count as
    failures; otherwise every outcome. `speedup_i` is `TaskOutcome.speedup`."""
    ps = tuple(ps)
    trials, total = _universe(outcomes, all_task_ids, seeds)
    speedups = [o.speedup for o in trials.values() if o.correct and o.speedup is not None]
    return FastP(ps, total, tuple(sum(1 for s in speedups if s > p) for p in ps))


@dataclass(frozen=True)
class GeomeanSpeedup:
    value: float | None  # None when no trial is correct
    correct: int
    total: int


def geomean_speedup(outcomes: Iterable[TaskOutcome]) -> GeomeanSpeedup:
    """Geometric mean of `TaskOutcome.speedup` over the correct trials (failures have no speedup to
    average; their share is in `correct` / `total`)."""
    outcomes = list(outcomes)
    speedups = [o.speedup for o in outcomes if o.correct and o.speedup is not None]
    return GeomeanSpeedup(geomean(speedups), len(speedups), len(outcomes))


# ------------------------------------------------------------------- library references (Figure 5)


@dataclass(frozen=True)
class LibraryRow:
    task_id: int
    operator: str
    precision: str
    reference_score: float
    best_score: float | None  # the best correct trial's P over the seeds, None if none is correct
    speedups: tuple[float | None, ...]  # that trial's per-size speedups
    reference_speedups: tuple[float | None, ...]
    trials: int
    correct: int

    @property
    def expert_relative(self) -> float:
        """s = t_reference / t_generated = P / P_reference (both over the same baseline); 0 without a
        correct trial (CUDAHercules: invalid tasks get no credit)."""
        return self.best_score / self.reference_score if self.best_score and self.reference_score else 0.0


@dataclass(frozen=True)
class LibraryComparison:
    rows: tuple[LibraryRow, ...]

    @property
    def mean_expert_relative(self) -> float | None:
        return sum(r.expert_relative for r in self.rows) / len(self.rows) if self.rows else None

    @property
    def beats_reference(self) -> int:
        return sum(1 for r in self.rows if r.expert_relative > 1)


def library_comparison(outcomes: Iterable[TaskOutcome]) -> LibraryComparison:
    """Per task with a library reference: the best correct P over its seeds beside the reference's P,
    and the expert-relative speed P / P_ref. Tasks without a reference are left out."""
    groups: dict[int, list[TaskOutcome]] = {}
    for o in outcomes:
        if o.reference_score is not None and o.reference_score > 0:
            groups.setdefault(o.task_id, []).append(o)
    rows = []
    for task_id, group in groups.items():
        first = group[0]
        correct = [o for o in group if o.correct and o.score is not None]
        best = max(correct, key=lambda o: o.score) if correct else None
        reference_speedups = next((o.reference_speedups for o in group if o.reference_speedups), ())
        rows.append(LibraryRow(task_id, first.operator, first.precision, first.reference_score,
                               best.score if best else None, best.speedups if best else (), reference_speedups,
                               len(group), len(correct)))
    rows.sort(key=lambda r: (r.operator, r.precision))
    return LibraryComparison(tuple(rows))


# ------------------------------------------------------------------------ per operator (Figure 5)


@dataclass(frozen=True)
class OperatorRow:
    """One task (operator at one precision): its best correct trial over the seeds, and the library
    reference over the same naive baseline where one exists."""

    task_id: int
    operator: str
    precision: str
    trials: int
    correct: int
    best_score: float | None  # the best correct trial's P, None if no trial is correct
    best_speedup: float | None  # that trial's speedup (geometric mean over sizes)
    reference_score: float | None

    @property
    def expert_relative(self) -> float | None:
        """P / P_reference where a reference exists (0 without a correct trial), else None."""
        if not self.reference_score or self.reference_score <= 0:
            return None
        return self.best_score / self.reference_score if self.best_score else 0.0


def per_operator(outcomes: Iterable[TaskOutcome]) -> tuple[OperatorRow, ...]:
    """Every task of the outcomes, in (operator, precision) order, with its best correct P over the seeds
    beside the reference's P: the data of the paper's Figure 5, failed tasks included (no best P)."""
    groups: dict[int, list[TaskOutcome]] = {}
    for o in outcomes:
        groups.setdefault(o.task_id, []).append(o)
    rows = []
    for task_id, group in groups.items():
        correct = [o for o in group if o.correct and o.score is not None]
        best = max(correct, key=lambda o: o.score) if correct else None
        reference = next((o.reference_score for o in group if o.reference_score is not None), None)
        rows.append(OperatorRow(task_id, group[0].operator, group[0].precision, len(group), len(correct),
                                best.score if best else None, best.speedup if best else None, reference))
    rows.sort(key=lambda r: (r.operator, r.precision, r.task_id))
    return tuple(rows)


# ------------------------------------------------------------------------------------- cost (Table 5)


@dataclass(frozen=True)
class RoleCost:
    role: str
    tokens: int
    cost_usd: float
    mean_tokens: float
    mean_cost_usd: float


@dataclass(frozen=True)
class CostSummary:
    trials: int  # trials that ran (missing ones cost nothing and are not averaged over)
    tokens: int
    cost_usd: float
    roles: tuple[RoleCost, ...]

    @property
    def mean_tokens(self) -> float:
        return self.tokens / self.trials if self.trials else 0.0

    @property
    def mean_cost_usd(self) -> float:
        return self.cost_usd / self.trials if self.trials else 0.0


def cost_summary(outcomes: Iterable[TaskOutcome]) -> CostSummary:
    """Total and average tokens and cost per task (per trial that ran), overall and per agent role."""
    ran = [o for o in outcomes if not o.is_missing]
    n = len(ran)
    roles = [r for r in ROLES if any(r in o.tokens_by_role or r in o.cost_by_role for o in ran)]
    roles += sorted({r for o in ran for r in (*o.tokens_by_role, *o.cost_by_role)} - set(roles))
    role_rows = []
    for role in roles:
        tokens = sum(o.tokens_by_role.get(role, 0) for o in ran)
        cost = sum(o.cost_by_role.get(role, 0.0) for o in ran)
        role_rows.append(RoleCost(role, tokens, cost, tokens / n if n else 0.0, cost / n if n else 0.0))
    return CostSummary(n, sum(o.tokens for o in ran), sum(o.cost_usd for o in ran), tuple(role_rows))


# ------------------------------------------------------------------------- bottleneck migration (Figure 8)


def dominant_class(per_size: Iterable[tuple[int, str]]) -> str:
    """The most common bottleneck class over a turn's (size index, class) profiles, "unknown" left out
    unless nothing else is known; a tie goes to the class seen at the largest size (it weighs most in P).
    "" when there are no profiles."""
    rows = list(per_size)
    known = [(i, c) for i, c in rows if c and c != UNKNOWN_CLASS] or [(i, c) for i, c in rows if c]
    if not known:
        return ""
    counts = Counter(c for _, c in known)
    top = max(counts.values())
    tied = {c for c, n in counts.items() if n == top}
    return max(((i, c) for i, c in known if c in tied), key=lambda ic: ic[0])[1]


@dataclass(frozen=True)
class BottleneckMigration:
    classes: tuple[str, ...]
    matrix: tuple[tuple[int, ...], ...]  # matrix[i][j]: trials whose baseline was classes[i] and best classes[j]

    @property
    def before(self) -> tuple[int, ...]:
        return tuple(sum(row) for row in self.matrix)

    @property
    def after(self) -> tuple[int, ...]:
        return tuple(sum(row[j] for row in self.matrix) for j in range(len(self.classes)))

    @property
    def total(self) -> int:
        return sum(self.before)

    @property
    def stayed(self) -> int:
        return sum(self.matrix[i][i] for i in range(len(self.classes)))


def bottleneck_migration(outcomes: Iterable[TaskOutcome], classes: Sequence[str] = CLASSES) -> BottleneckMigration:
    """Baseline class → best candidate class, counted over correct trials where both classes are among
    `classes` (unknown or unprofiled ones are left out)."""
    classes = tuple(classes)
    index = {c: i for i, c in enumerate(classes)}
    matrix = [[0] * len(classes) for _ in classes]
    for o in outcomes:
        if o.correct and o.baseline_class in index and o.best_class in index:
            matrix[index[o.baseline_class]][index[o.best_class]] += 1
    return BottleneckMigration(classes, tuple(tuple(row) for row in matrix))


# ------------------------------------------------------------------------- ablation (Tables 3, 4 and 5)


@dataclass(frozen=True)
class ExperimentOutcomes:
    """One column of an ablation: an experiment's label, its configuration and its outcomes."""

    label: str
    outcomes: tuple[TaskOutcome, ...]
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AblationRow:
    metric: str
    values: tuple[float | str | None, ...]  # one per experiment, in column order


@dataclass(frozen=True)
class AblationTable:
    columns: tuple[str, ...]
    rows: tuple[AblationRow, ...]
    tasks: int  # tasks compared (present in every experiment)
    dropped: tuple[int, ...]  # per column: trials left out because their task is not in every experiment

    def row(self, metric: str) -> AblationRow:
        return next(r for r in self.rows if r.metric == metric)


def common_tasks(experiments: Sequence[ExperimentOutcomes]) -> set[int]:
    """The task ids every experiment covers (an ablation compares only those)."""
    return set.intersection(*({o.task_id for o in e.outcomes} for e in experiments)) if experiments else set()


def ablation_table(experiments: Sequence[ExperimentOutcomes], taus: Sequence[float] = TAUS,
                   ps: Sequence[float] = PS) -> AblationTable:
    """The same tasks under different configurations, side by side: each experiment restricted to the
    tasks every experiment covers, then its configuration, cumulative success at each tau, fast_p at
    each p, geometric-mean speedup and average cost and tokens per task."""
    common = common_tasks(experiments)
    restricted = [[o for o in e.outcomes if o.task_id in common] for e in experiments]
    dropped = tuple(len(e.outcomes) - len(r) for e, r in zip(experiments, restricted, strict=True))
    rows: list[AblationRow] = []
    config_keys = list(dict.fromkeys(k for e in experiments for k in e.config))
    rows += [AblationRow(k, tuple(e.config.get(k, "") for e in experiments)) for k in config_keys]
    rows.append(AblationRow("trials", tuple(len(r) for r in restricted)))
    curves = [success_curve(r, taus).series[0] for r in restricted]
    for n, tau in enumerate(taus):
        rows.append(AblationRow(f"success P>{tau:g}", tuple(c.rates[n] for c in curves)))
    fasts = [fast_p(r, ps) for r in restricted]
    for n, p in enumerate(ps):
        rows.append(AblationRow(f"fast_{p:g}", tuple(f.values[n] for f in fasts)))
    rows.append(AblationRow("geomean speedup", tuple(geomean_speedup(r).value for r in restricted)))
    costs = [cost_summary(r) for r in restricted]
    rows.append(AblationRow("mean cost USD", tuple(c.mean_cost_usd for c in costs)))
    rows.append(AblationRow("mean tokens", tuple(c.mean_tokens for c in costs)))
    return AblationTable(tuple(e.label for e in experiments), tuple(rows), len(common), dropped)
