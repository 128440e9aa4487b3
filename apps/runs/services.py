"""Writes for runs: creation, the status state machine and idempotent claims."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.runs.dispatch import run_dispatch
from apps.runs.events import event_append
from apps.runs.models import RUN_TRANSITIONS, Run, RunStatus
from apps.runs.quotas import quota_check_run, quota_reserve

logger = logging.getLogger(__name__)


class TransitionError(Exception):
    """The run is not in a status from which the requested one may follow."""


@dataclass(frozen=True)
class RunConfig:
    model: str
    rounds: int = 3
    debug_rounds: int = 3
    profile_mode: str = "filtered"
    timing_protocol: str = "synchronized"  # TimingProtocol: how every evaluation of the run times a call
    temperature: float = 0.2
    seed: int | None = None
    endpoint_id: int | None = None
    agent_models: dict | None = None
    time_budget_s: int | None = None
    token_budget: int | None = None
    cost_budget_usd: float | None = None
    queue: str = ""  # the GPU queue to send the run to, e.g. gpu.h100; "" = settings.KERNELWEB_GPU_QUEUE


def run_create(*, owner, task, config: RunConfig, is_public: bool = False, dispatch: bool = True) -> Run:
    """Create a queued run and hand it to a GPU worker of its queue once the row is committed."""
    with transaction.atomic():
        quota_check_run(owner)  # QuotaExceeded: the owner is at their limit (apps/runs/quotas.py)
        run = Run.objects.create(
            owner=owner,
            task=task,
            is_public=is_public,
            endpoint_id=config.endpoint_id,
            model=config.model,
            agent_models=config.agent_models or {},
            rounds=config.rounds,
            debug_rounds=config.debug_rounds,
            profile_mode=config.profile_mode,
            timing_protocol=config.timing_protocol,
            temperature=config.temperature,
            seed=config.seed,
            time_budget_s=config.time_budget_s,
            token_budget=config.token_budget,
            cost_budget_usd=config.cost_budget_usd,
            queue=config.queue or settings.KERNELWEB_GPU_QUEUE,
            task_revision=task.revision,
            dispatch_pending=dispatch,  # the outbox: sent after commit, or later by the reconciler
        )
        event_append(run.pk, "run.queued", {"task": task.slug, "model": config.model})
        if dispatch:
            transaction.on_commit(lambda: run_dispatch(run.pk))
    return run


def runs_launch(*, owner, tasks, config: RunConfig, is_public: bool = False) -> list[Run]:
    """One run per task with the same configuration, all or none created."""
    tasks = list(tasks)
    with transaction.atomic(), quota_reserve(owner, runs=len(tasks)):
        return [run_create(owner=owner, task=task, config=config, is_public=is_public) for task in tasks]


QUEUE_UNREACHABLE = ("the job queue is unreachable; your run is saved and will start when it is back "
                     "(the reconciler sends it as soon as the broker answers)")


def runs_unsent(runs: list[Run]) -> list[int]:
    """Which of just-launched `runs` the broker refused (still in the outbox): call after `runs_launch`
    returns. Inside an outer transaction nothing has been sent yet, so nothing is reported."""
    if transaction.get_connection().in_atomic_block or not runs:
        return []
    return list(Run.objects.filter(pk__in=[r.pk for r in runs], dispatch_pending=True,
                                   status=RunStatus.QUEUED).values_list("pk", flat=True))


def _allowed_sources(target: str) -> list[str]:
    return [source for source, targets in RUN_TRANSITIONS.items() if target in targets]


def run_transition(run_id: int, target: str, *, error: str = "", **fields) -> bool:
    """Move a run to `target` if the state machine allows it from its current status.

    A conditional UPDATE, so two workers (or a worker and a cancel) racing on the
    same run cannot both win. Returns whether this call made the change.
    """
    if target not in RUN_TRANSITIONS:
        raise TransitionError(f"unknown status {target!r}")
    now = timezone.now()
    values = dict(fields, status=target)
    if target == RunStatus.RUNNING:
        values.setdefault("started_at", now)
    if target in RunStatus.terminal():
        values["finished_at"] = now
        values["error"] = error
    with transaction.atomic():
        changed = Run.objects.filter(pk=run_id, status__in=_allowed_sources(target)).update(**values) == 1
        if changed:
            payload = {"status": target}
            if error:
                payload["error"] = error
            event_append(run_id, f"run.{target}", payload)
            if target == RunStatus.FAILED:  # the worker's log says why, once the failure is stored
                transaction.on_commit(lambda: logger.warning("run %s failed: %s", run_id,
                                                             error or "no reason given"))
            elif target == RunStatus.CANCELLED:
                transaction.on_commit(lambda: logger.info("run %s cancelled%s", run_id, f": {error}" if error else ""))
    return changed


MAX_ATTEMPTS = 2  # a run whose worker dies is started once more, then failed


def run_claim(run_id: int, *, worker_host: str, gpu_name: str = "", message: str = "", **where) -> bool:
    """Claim a queued run for this worker; exactly one of several racing claims wins. `message` is the
    Celery message id that carried the claim: only a redelivery of it may take the run over later.
    `where`: the worker's node name and GPU (worker_name, gpu_index, gpu_uuid), recorded with the run."""
    return run_transition(run_id, RunStatus.RUNNING, worker_host=worker_host, gpu_name=gpu_name,
                          attempts=F("attempts") + 1, claim_message=message, **where)


class DuplicateDelivery(Exception):
    """A second message for a run that another message is running (the reconciler re-sent it)."""


def run_reclaim(run_id: int, *, worker_host: str, gpu_name: str = "", message: str = "", **where) -> bool:
    """Take over a run whose message came back while it was `running`: its worker was lost.

    The broker only redelivers an unacknowledged message when the worker holding it died (late
    acks, reject on worker lost, visibility timeout above the hard time limit), so a running run
    that arrives again is an orphan. It is restarted once; the second loss fails it for good.
    A different message for a running run is a duplicate (the reconciler re-sends queued runs whose
    message may have been lost with a broker restart): it raises DuplicateDelivery and changes nothing.
    """
    with transaction.atomic():
        previous, claimed_by = Run.objects.filter(pk=run_id).values_list("worker_host", "claim_message").first() \
            or ("", "")
        if message and claimed_by and message != claimed_by:
            raise DuplicateDelivery(f"run {run_id} is running under message {claimed_by}; {message} is a duplicate")
        taken = Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, attempts__lt=MAX_ATTEMPTS).update(
            attempts=F("attempts") + 1, worker_host=worker_host, gpu_name=gpu_name, **where
        ) == 1
        if taken:
            event_append(run_id, "run.requeued", {"lost_worker": previous, "worker": worker_host})
            return True
    run_fail(run_id, f"the worker running this run was lost {MAX_ATTEMPTS} times (last on {previous}); "
             "check the GPU worker's logs (out of memory, killed, restarted) and launch the run again")
    return False


def run_cancel(run: Run) -> bool:
    return run_transition(run.pk, RunStatus.CANCELLED, error="cancelled by user")


def run_fail(run_id: int, error: str) -> bool:
    return run_transition(run_id, RunStatus.FAILED, error=error)


def run_succeed(run_id: int) -> bool:
    return run_transition(run_id, RunStatus.SUCCEEDED)
