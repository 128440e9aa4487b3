"""Reads for experiments: visibility, task selections, progress, and the outcomes the analyses take.

Everything a user triggers goes through `experiments_visible_to`. `outcomes_for` turns an experiment's
runs into `analysis.TaskOutcome`s in a fixed number of queries, whatever the number of tasks.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db.models import Count, F, Q, QuerySet, Sum

from apps.catalog.models import Task
from apps.experiments.analysis import MISSING, ExperimentOutcomes, TaskOutcome, dominant_class, missing_outcome
from apps.experiments.models import Experiment, ExperimentRun
from apps.runs.models import AgentCall, Profile, RunStatus, Turn, TurnKind

# ------------------------------------------------------------------------------------------ visibility


def experiments_visible_to(user) -> QuerySet[Experiment]:
    """Owners see their experiments, everyone (anonymous visitors too) sees public ones, staff see all."""
    experiments = Experiment.objects.select_related("owner", "endpoint")
    if not user.is_authenticated:
        return experiments.filter(is_public=True)
    if user.is_staff:
        return experiments
    return experiments.filter(Q(owner=user) | Q(is_public=True))


def experiment_for_user(user, experiment_id: int) -> Experiment | None:
    return experiments_visible_to(user).filter(pk=experiment_id).first()


def experiments_with_counts(experiments: QuerySet[Experiment]) -> QuerySet[Experiment]:
    """Each experiment with `trials` (its (task, seed) pairs), `active` (queued or running) and `succeeded`,
    in one query for a whole list. Counting over every attempt is exact: a re-run only follows a failed,
    cancelled or deleted run, so earlier attempts are never active or succeeded."""
    return experiments.annotate(
        trials=Count("members", filter=Q(members__attempt=0)),
        active=Count("members", filter=Q(members__run__status__in=[RunStatus.QUEUED, RunStatus.RUNNING])),
        succeeded=Count("members", filter=Q(members__run__status=RunStatus.SUCCEEDED)),
    )


# -------------------------------------------------------------------------------------- task selection


@dataclass(frozen=True)
class TaskSelection:
    """Which enabled tasks an experiment runs: a suite, a category, a precision and/or a hand-picked
    list, all optional and combined (an empty selection is every enabled task)."""

    suite: str = ""
    category: str = ""
    precision: str = ""
    task_ids: tuple[int, ...] = ()

    def tasks(self) -> QuerySet[Task]:
        tasks = Task.objects.filter(enabled=True)
        if self.suite:
            tasks = tasks.filter(suite=self.suite)
        if self.category:
            tasks = tasks.filter(category=self.category)
        if self.precision:
            tasks = tasks.filter(precision=self.precision)
        if self.task_ids:
            tasks = tasks.filter(pk__in=self.task_ids)
        return tasks.order_by("suite", "category", "operator", "precision")

    def describe(self) -> str:
        parts = [f"{name} {value}" for name, value in
                 (("suite", self.suite), ("category", self.category), ("precision", self.precision)) if value]
        if self.task_ids:
            parts.append(f"{len(self.task_ids)} hand-picked task{'s' if len(self.task_ids) != 1 else ''}")
        return ", ".join(parts) or "all enabled tasks"


# --------------------------------------------------------------------------------------------- members


def current_members(experiment: Experiment) -> list[ExperimentRun]:
    """The latest attempt of every (task, seed), with its run and task, in task order (one query)."""
    latest: dict[tuple[int, int], ExperimentRun] = {}
    members = experiment.members.select_related("run", "task").order_by(
        "task__suite", "task__category", "task__operator", "task__precision", "seed_index", "attempt")
    for member in members:
        latest[(member.task_id, member.seed_index)] = member
    return list(latest.values())


# -------------------------------------------------------------------------------------------- progress


@dataclass(frozen=True)
class ProgressRow:
    task_id: int
    task: str  # suite/operator/precision
    operator: str
    precision: str
    seed_index: int
    attempt: int
    run_id: int | None
    status: str  # a RunStatus value, or "missing" when the run was deleted
    best_score: float | None
    error: str


@dataclass(frozen=True)
class ExperimentProgress:
    rows: tuple[ProgressRow, ...]
    counts: Mapping[str, int]  # per status, every RunStatus and "missing" present (0 when none)

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def done(self) -> int:
        return self.total - self.counts[RunStatus.QUEUED] - self.counts[RunStatus.RUNNING]

    @property
    def is_active(self) -> bool:
        return self.done < self.total

    @property
    def rerunnable(self) -> int:
        return self.counts[RunStatus.FAILED] + self.counts[RunStatus.CANCELLED] + self.counts[MISSING]


def experiment_progress(experiment: Experiment) -> ExperimentProgress:
    """Queued / running / done per (task, seed), from the latest attempt of each (one query)."""
    rows = []
    for m in current_members(experiment):
        run = m.run
        rows.append(ProgressRow(
            m.task_id, m.task.slug, m.task.operator, m.task.precision, m.seed_index, m.attempt,
            run.pk if run else None, run.status if run else MISSING, run.best_score if run else None,
            run.error if run else "the run was deleted",
        ))
    counts = Counter(r.status for r in rows)
    return ExperimentProgress(tuple(rows), {status: counts.get(status, 0) for status in (*RunStatus.values, MISSING)})


# ------------------------------------------------------------------------------------ library references


@dataclass(frozen=True)
class LibraryReference:
    score: float | None  # the reference's P over the naive baseline
    speedups: tuple[float | None, ...]  # per size


def load_library_references(path: str | Path | None) -> dict[tuple[str, str], LibraryReference]:
    """The library references' speedups over the naive baselines, keyed by (operator, precision), from the
    JSON that `bench/library.py --time --json PATH` writes (its "reference" evaluations). An empty or
    missing path, or an unreadable file, gives no references."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = {}
    for ev in data.get("reference", []) if isinstance(data, dict) else []:
        if not isinstance(ev, dict) or ev.get("verdict") != "ok" or not ev.get("task"):
            continue
        speedups = tuple(s.get("speedup") for s in ev.get("sizes") or () if isinstance(s, dict))
        found[(ev["task"], ev.get("precision", ""))] = LibraryReference(ev.get("score"), speedups)
    return found


def library_references() -> dict[tuple[str, str], LibraryReference]:
    """The references from the file named by the LIBRARY_REFERENCES_FILE setting, if any."""
    return load_library_references(getattr(settings, "LIBRARY_REFERENCES_FILE", ""))


def measured_reference(results: list | None) -> LibraryReference | None:
    """The expert reference a turn was timed against (SizeResult.reference: torch.compile for a KernelBench
    task, the harness's "Ref time" for a task.yaml task), as its P and per-size speedups over the same
    baseline; None when the turn has no reference times."""
    speedups, weights = [], []
    for r in results or ():
        if not isinstance(r, dict):
            continue
        base, ref = (r.get("baseline") or {}).get("mean_ms"), (r.get("reference") or {}).get("mean_ms")
        if base and ref:
            speedups.append(base / ref)
            weights.append(float(r.get("complexity") or 1.0))
    if not speedups:
        return None
    score = sum(w * s for w, s in zip(weights, speedups, strict=True)) / sum(weights)
    return LibraryReference(score, tuple(speedups))


# For a KernelBench task the expert is PyTorch itself (cuBLAS, cuDNN behind eager mode): unless torch.compile
# was timed as its reference, the baseline is the reference and expert-relative speed is the speedup.
EAGER_PYTORCH = LibraryReference(1.0, (1.0,))


# -------------------------------------------------------------------------------------------- outcomes


def _best_candidates(run_best: Mapping[int, int | None]) -> dict[int, tuple[int, float | None]]:
    """Per run: (turn id, P) of its best valid generated turn: the run's best turn when that is a generated
    one, else the valid optimize or debug turn with the highest P (the earliest on a tie)."""
    candidates: dict[int, list[tuple[int, float | None]]] = defaultdict(list)
    turns = (Turn.objects.filter(run_id__in=list(run_best), valid=True, round_index__gte=1,
                                 kind__in=(TurnKind.OPTIMIZE, TurnKind.DEBUG))
             .order_by("run_id", "round_index", "debug_index").values_list("id", "run_id", "score"))
    for turn_id, run_id, score in turns:
        candidates[run_id].append((turn_id, score))
    best = {}
    for run_id, found in candidates.items():
        own = next((t for t in found if t[0] == run_best[run_id]), None)
        best[run_id] = own or max(found, key=lambda t: t[1] if t[1] is not None else float("-inf"))
    return best


def outcomes_for(experiment: Experiment,
                 references: Mapping[tuple[str, str], LibraryReference] | None = None) -> list[TaskOutcome]:
    """One TaskOutcome per (task, seed) of the experiment, from the latest attempt, in five queries (six with
    KernelBench or task.yaml tasks).

    correct: the run succeeded and has a valid generated (optimize or debug) turn, whose P is the outcome's
    score (Run.best_score when the best turn is generated; a run whose best is still the baseline keeps
    its best valid candidate's P, below 1). Classes: the dominant Profile.bottleneck of the baseline turn
    (round 0) and of that candidate. Tokens and cost: the run's totals (the sum of its agent calls when the
    run never recorded totals), per role from its agent calls. References: `references`, else the
    LIBRARY_REFERENCES_FILE setting (see load_library_references); for KernelBench and task.yaml tasks the
    reference times measured with the run (measured_reference), and eager PyTorch for KernelBench tasks
    that timed no other reference.
    """
    refs = library_references() if references is None else references
    members = current_members(experiment)
    runs = {m.run.pk: m.run for m in members if m.run is not None}
    best = _best_candidates({pk: run.best_turn_id for pk, run in runs.items()})

    best_ids = [turn_id for turn_id, _ in best.values()]
    speedups = {turn_id: tuple(r.get("speedup") for r in results or () if isinstance(r, dict))
                for turn_id, results in Turn.objects.filter(pk__in=best_ids).values_list("id", "results")}

    classes: dict[tuple[int, str], list[tuple[int, str]]] = defaultdict(list)
    profiles = Profile.objects.filter(
        Q(turn__run_id__in=list(runs), turn__round_index=0, turn__debug_index=0) | Q(turn_id__in=best_ids)
    ).values_list("turn__run_id", "turn__round_index", "size_index", "bottleneck")
    for run_id, round_index, size_index, bottleneck in profiles:
        classes[(run_id, "baseline" if round_index == 0 else "best")].append((size_index, bottleneck))

    tokens_by_role: dict[int, dict[str, int]] = defaultdict(dict)
    cost_by_role: dict[int, dict[str, float]] = defaultdict(dict)
    calls = (AgentCall.objects.filter(turn__run_id__in=list(runs)).values("turn__run_id", "role")
             .annotate(tokens=Sum(F("tokens_in") + F("tokens_out")), cost=Sum("cost_usd")).order_by())
    for row in calls:
        tokens_by_role[row["turn__run_id"]][row["role"]] = int(row["tokens"] or 0)
        cost_by_role[row["turn__run_id"]][row["role"]] = float(row["cost"] or 0)

    # Tasks of the other formats bring their own reference times (round 0 first, else the best candidate).
    measured: dict[int, LibraryReference] = {}
    other_formats = [m.run.pk for m in members if m.run is not None and m.task.format.evaluate_reference is None]
    timed = (Turn.objects.filter(Q(round_index=0, debug_index=0) | Q(pk__in=best_ids), run_id__in=other_formats)
             .order_by("-round_index").values_list("run_id", "results")) if other_formats else ()
    for run_id, results in timed:
        found = measured_reference(results)
        if found is not None:
            measured[run_id] = found

    outcomes = []
    for m in members:
        task, run = m.task, m.run
        ref = refs.get((task.operator, task.precision)) or (measured.get(run.pk) if run else None)
        if ref is None and task.format.baseline_is_reference:
            ref = EAGER_PYTORCH
        ref_score, ref_speedups = (ref.score, ref.speedups) if ref else (None, ())
        if run is None:
            outcomes.append(missing_outcome(task.pk, task.operator, task.precision, task.category, m.seed_index,
                                            ref_score))
            continue
        candidate = best.get(run.pk)
        correct = run.status == RunStatus.SUCCEEDED and candidate is not None
        roles_tokens, roles_cost = tokens_by_role.get(run.pk, {}), cost_by_role.get(run.pk, {})
        tokens = run.tokens_in + run.tokens_out or sum(roles_tokens.values())
        cost = float(run.cost_usd) or sum(roles_cost.values())
        outcomes.append(TaskOutcome(
            task_id=task.pk, operator=task.operator, precision=task.precision, category=task.category,
            seed_index=m.seed_index, status=run.status, correct=correct,
            score=candidate[1] if correct else None,
            speedups=speedups.get(candidate[0], ()) if correct else (),
            baseline_class=dominant_class(classes.get((run.pk, "baseline"), ())),
            best_class=dominant_class(classes.get((run.pk, "best"), ())) if correct else "",
            reference_score=ref_score, reference_speedups=ref_speedups,
            tokens=tokens, cost_usd=cost, tokens_by_role=roles_tokens, cost_by_role=roles_cost,
            run_id=run.pk, error=run.error,
        ))
    return outcomes


def config_summary(experiment: Experiment) -> dict[str, str]:
    """The configuration as the ablation table shows it (one text per setting)."""
    models = ", ".join(f"{role}={model}" for role, model in sorted((experiment.agent_models or {}).items()))
    return {
        "model": experiment.model + (f" ({models})" if models else ""),
        "rounds R": str(experiment.rounds),
        "debug rounds D": str(experiment.debug_rounds),
        "profile": experiment.profile_mode,
        "timing": experiment.timing_protocol,
        "temperature": f"{experiment.temperature:g}",
        "seeds": str(experiment.seeds),
    }


def experiment_outcomes(experiment: Experiment,
                        references: Mapping[tuple[str, str], LibraryReference] | None = None) -> ExperimentOutcomes:
    """An ablation column: the experiment's name, configuration and outcomes."""
    return ExperimentOutcomes(experiment.name, tuple(outcomes_for(experiment, references)),
                              config_summary(experiment))
