"""Per-user quotas on GPU work: queued + running runs, active experiments, pending manual turns.

GPUs are the scarce resource, and the API's request rate limit is far above what they can serve, so a
launch is refused once the owner would have more in flight than their limit. Limits come from the
settings (QUOTA_*) unless `apps.accounts.models.Quota` rows for the user or one of their groups set them
(the most generous applicable value wins); staff users are exempt.

The check runs inside the launch's transaction and first locks the owner's user row (SELECT ... FOR
UPDATE; on SQLite the IMMEDIATE transactions already serialise writers), so concurrent launches of one
user are counted one after the other and cannot overshoot together. A launch of N runs (several tasks,
an experiment) is checked once for all N (`quota_reserve`); `run_create` then consumes the reservation
instead of counting again, and a run created outside any reservation is checked on its own
(`quota_check_run`).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Q

from apps.runs.models import Run, RunStatus, Turn, TurnKind

ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)
PENDING_VERDICTS = ("", "queued")  # as apps/runs/viewer.py: a manual turn not evaluated yet

RUNS, EXPERIMENTS, MANUAL_TURNS = "active_runs", "active_experiments", "pending_manual_turns"
# (settings default, what is counted, how a number of it reads)
KINDS = {
    RUNS: ("QUOTA_ACTIVE_RUNS", "queued or running", ("run", "runs")),
    EXPERIMENTS: ("QUOTA_ACTIVE_EXPERIMENTS", "with runs queued or running", ("experiment", "experiments")),
    MANUAL_TURNS: ("QUOTA_PENDING_MANUAL_TURNS", "waiting for evaluation", ("manual turn", "manual turns")),
}


def _n(count: int, kind: str) -> str:
    one, many = KINDS[kind][2]
    return f"{count} {one if count == 1 else many}"


class QuotaExceeded(Exception):
    """A launch would take the owner over one of their limits; nothing was created."""

    def __init__(self, kind: str, *, limit: int, in_flight: int, asked: int):
        self.kind, self.limit, self.in_flight, self.asked = kind, limit, in_flight, asked
        super().__init__(self.message)

    @property
    def message(self) -> str:
        state = KINDS[self.kind][1]
        have = f"you have {_n(self.in_flight, self.kind)} {state}"
        if self.asked > 1:
            have += f" and asked for {self.asked} more"
        return (f"{have}, the limit is {self.limit}; wait for some to finish or ask an admin to raise it")

    def as_dict(self) -> dict:
        """The API's 429 body."""
        return {"detail": self.message[0].upper() + self.message[1:] + ".", "limit": self.limit,
                "in_flight": self.in_flight, "quota": self.kind}


@dataclass(frozen=True)
class Limits:
    active_runs: int
    active_experiments: int
    pending_manual_turns: int


def limits_for(user) -> Limits:
    """The user's limits: per limit, the most generous value of the Quota rows for them or their groups,
    else the settings' default."""
    from apps.accounts.models import Quota  # accounts is a leaf app; imported here to keep start-up order free

    rows = list(Quota.objects.filter(Q(user_id=user.pk) | Q(group__user=user.pk)).distinct())
    values = {}
    for kind, (setting, _, _) in KINDS.items():
        set_by_rows = [getattr(row, kind) for row in rows if getattr(row, kind) is not None]
        values[kind] = max(set_by_rows) if set_by_rows else getattr(settings, setting)
    return Limits(**values)


def runs_in_flight(user) -> int:
    """Queued + running runs; a manual turn's own run is counted as a manual turn instead."""
    return Run.objects.filter(owner_id=user.pk, status__in=ACTIVE).exclude(origin="manual").count()


def experiments_in_flight(user) -> int:
    from apps.experiments.models import Experiment  # experiments depends on runs, not the other way

    return Experiment.objects.filter(owner_id=user.pk, members__run__status__in=ACTIVE).distinct().count()


def manual_turns_pending(user) -> int:
    return (Turn.objects.filter(run__owner_id=user.pk, kind=TurnKind.MANUAL, verdict__in=PENDING_VERDICTS)
            .exclude(run__status=RunStatus.CANCELLED).count())


COUNTERS = {RUNS: runs_in_flight, EXPERIMENTS: experiments_in_flight, MANUAL_TURNS: manual_turns_pending}


def exempt(user) -> bool:
    return bool(getattr(user, "is_staff", False))


def _lock_owner(user) -> None:
    """Serialise this user's launches until the surrounding transaction ends (a no-op lock on SQLite,
    whose IMMEDIATE transactions take the database's write lock at BEGIN)."""
    list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))


def quota_check(owner, *, runs: int = 0, experiments: int = 0, manual_turns: int = 0) -> None:
    """Raise QuotaExceeded if adding this much would take `owner` over a limit. Call inside the transaction
    that creates the rows: the owner's row stays locked until it commits."""
    if exempt(owner):
        return
    asked = {RUNS: runs, EXPERIMENTS: experiments, MANUAL_TURNS: manual_turns}
    _lock_owner(owner)
    limits = limits_for(owner)
    for kind, count in asked.items():
        if count <= 0:
            continue
        limit = getattr(limits, kind)
        in_flight = COUNTERS[kind](owner)
        if in_flight + count > limit:
            raise QuotaExceeded(kind, limit=limit, in_flight=in_flight, asked=count)


_reserved: ContextVar[dict | None] = ContextVar("quota_reserved", default=None)


@contextmanager
def quota_reserve(owner, *, runs: int = 0, experiments: int = 0, manual_turns: int = 0):
    """Check a launch of several things at once, then let the creations inside the block go unchecked
    (up to what was reserved). Use inside the launch's transaction."""
    quota_check(owner, runs=runs, experiments=experiments, manual_turns=manual_turns)
    outer = _reserved.get() or {}
    reserved = dict(outer)
    for kind, count in ((RUNS, runs), (EXPERIMENTS, experiments), (MANUAL_TURNS, manual_turns)):
        reserved[(owner.pk, kind)] = reserved.get((owner.pk, kind), 0) + count
    token = _reserved.set(reserved)
    try:
        yield
    finally:
        _reserved.reset(token)


def _consume(owner, kind: str) -> bool:
    reserved = _reserved.get()
    key = (owner.pk, kind)
    if reserved and reserved.get(key, 0) > 0:
        reserved[key] -= 1
        return True
    return False


def quota_check_run(owner) -> None:
    """One more run for `owner` (called by run_create before it creates the row)."""
    if not _consume(owner, RUNS):
        quota_check(owner, runs=1)


def quota_check_manual_turn(owner) -> None:
    """One more pending manual turn for `owner`."""
    if not _consume(owner, MANUAL_TURNS):
        quota_check(owner, manual_turns=1)


def quota_summary(user) -> str:
    """One sentence for the launch pages: what the user has in flight against their limits ("" for staff)."""
    if exempt(user):
        return ""
    limits = limits_for(user)
    return (f"Your quota: {runs_in_flight(user)} of {limits.active_runs} runs queued or running, "
            f"{experiments_in_flight(user)} of {limits.active_experiments} experiments in flight, "
            f"{manual_turns_pending(user)} of {limits.pending_manual_turns} manual turns waiting.")
