"""Writes for experiments: launch one run per task × seed, cancel, re-run the failed ones.

Runs are created through `apps.runs.services.run_create`, inside one transaction: either the
experiment and all its runs exist, or nothing does; the runs go to the GPU workers only once that
transaction commits (run_create's on_commit dispatch, discarded on rollback).
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from django.core.exceptions import PermissionDenied
from django.db import transaction

from apps.experiments.models import Experiment, ExperimentRun
from apps.experiments.selectors import current_members
from apps.llm.selectors import endpoints_for
from apps.runs.models import Run, RunStatus
from apps.runs.quotas import quota_reserve
from apps.runs.services import RunConfig, run_cancel, run_create

MAX_SEEDS = 10
MAX_RUNS = 2000  # tasks × seeds per launch; the MSKernelBench library at 10 seeds is 1000
NAME_MAX = Experiment._meta.get_field("name").max_length
RERUN_STATUSES = frozenset({RunStatus.FAILED, RunStatus.CANCELLED})


class ExperimentError(ValueError):
    """The experiment cannot be launched as asked; the message says why, for the page or the API."""


def _require_owner(experiment: Experiment, user) -> None:
    if user is None or not (user.is_staff or experiment.owner_id == user.pk):
        raise PermissionDenied("only the experiment's owner may change it")


def config_of(experiment: Experiment) -> RunConfig:
    return RunConfig(
        model=experiment.model, rounds=experiment.rounds, debug_rounds=experiment.debug_rounds,
        profile_mode=experiment.profile_mode, timing_protocol=experiment.timing_protocol,
        temperature=experiment.temperature, seed=experiment.seed, endpoint_id=experiment.endpoint_id,
        agent_models=dict(experiment.agent_models or {}),
        time_budget_s=experiment.time_budget_s, token_budget=experiment.token_budget,
        cost_budget_usd=float(experiment.cost_budget_usd) if experiment.cost_budget_usd is not None else None,
    )


def seed_for(base: int | None, seed_index: int, seeds: int) -> int | None:
    """One seed keeps the configured seed (possibly none); several get base + k (base 0 when unset)."""
    if seeds <= 1:
        return base
    return (base or 0) + seed_index


def _launch_member(experiment: Experiment, task, seed_index: int, attempt: int, dispatch: bool) -> Run:
    config = config_of(experiment)
    config = replace(config, seed=seed_for(experiment.seed, seed_index, experiment.seeds))
    run = run_create(owner=experiment.owner, task=task, config=config, is_public=experiment.is_public,
                     dispatch=dispatch)
    ExperimentRun.objects.create(experiment=experiment, task=task, seed_index=seed_index, attempt=attempt, run=run)
    return run


def experiment_launch(*, owner, name: str, tasks, config: RunConfig, seeds: int = 1, selection: str = "",
                      description: str = "", is_public: bool = False, dispatch: bool = True) -> Experiment:
    """Create the experiment and one queued run per task × seed, all or none; dispatched after commit."""
    name = (name or "").strip()
    if not name:
        raise ExperimentError("give the experiment a name")
    if len(name) > NAME_MAX:
        raise ExperimentError(f"the name is longer than {NAME_MAX} characters")
    tasks = list({task.pk: task for task in tasks}.values())  # each task once, in the order given
    if not tasks:
        raise ExperimentError("select at least one task")
    disabled = [str(task) for task in tasks if not task.enabled]
    if disabled:
        raise ExperimentError(f"disabled tasks cannot run: {', '.join(disabled)}")
    if not 1 <= seeds <= MAX_SEEDS:
        raise ExperimentError(f"seeds must be between 1 and {MAX_SEEDS}")
    if len(tasks) * seeds > MAX_RUNS:
        raise ExperimentError(f"{len(tasks)} tasks × {seeds} seeds is more than {MAX_RUNS} runs")
    if config.endpoint_id is not None and not endpoints_for(owner).filter(pk=config.endpoint_id).exists():
        raise ExperimentError("that LLM endpoint is not one of yours or a shared one")
    with transaction.atomic(), quota_reserve(owner, runs=len(tasks) * seeds, experiments=1):
        experiment = Experiment.objects.create(
            name=name, owner=owner, description=description, selection=selection[:500], is_public=is_public,
            endpoint_id=config.endpoint_id, model=config.model, agent_models=config.agent_models or {},
            rounds=config.rounds, debug_rounds=config.debug_rounds, profile_mode=config.profile_mode,
            timing_protocol=config.timing_protocol, temperature=config.temperature, seed=config.seed,
            time_budget_s=config.time_budget_s, token_budget=config.token_budget,
            cost_budget_usd=Decimal(str(config.cost_budget_usd)) if config.cost_budget_usd is not None else None,
            seeds=seeds,
        )
        for task in tasks:
            for seed_index in range(seeds):
                _launch_member(experiment, task, seed_index, 0, dispatch)
    return experiment


def experiment_cancel(experiment: Experiment, *, by) -> int:
    """Cancel every queued or running run of the experiment; returns how many were cancelled."""
    _require_owner(experiment, by)
    return sum(run_cancel(m.run) for m in current_members(experiment) if m.run is not None and m.run.is_active)


def experiment_rerun_failed(experiment: Experiment, *, by, dispatch: bool = True) -> list[Run]:
    """A new run, with the experiment's configuration and the same seed, for every (task, seed) whose
    latest run failed, was cancelled or was deleted (tasks disabled since are skipped); all or none,
    dispatched after commit."""
    _require_owner(experiment, by)
    with transaction.atomic():
        # Serialise re-runs of one experiment: two at once would both pick attempt + 1.
        list(Experiment.objects.select_for_update().filter(pk=experiment.pk).values_list("pk", flat=True))
        members = current_members(experiment)
        redo = [m for m in members if m.task.enabled and (m.run is None or m.run.status in RERUN_STATUSES)]
        idle = not any(m.run is not None and m.run.is_active for m in members)
        with quota_reserve(experiment.owner, runs=len(redo), experiments=1 if idle and redo else 0):
            return [_launch_member(experiment, m.task, m.seed_index, m.attempt + 1, dispatch) for m in redo]
