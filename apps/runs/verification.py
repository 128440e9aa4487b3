"""Verified before published: every turn a public page shows is evaluated again, in a fresh process, with
input seeds it has never seen (docs/evaluation.md, "Verified before published").

Published turns are the best turns of succeeded runs that are public or belong to a public experiment:
those are the numbers the showcase and experiment tables put in front of people. This module (web side)
finds them, asks for a verification (a `TurnVerification` row, then a message to the run's GPU queue) and
re-sends what was never delivered; the GPU worker's side is `apps.runs.execution.turn_verify`, and the
decision itself is the engine's (worker/engine/verification.py).

Celery beat runs `runs.verify_published` every VERIFY_INTERVAL_SECONDS; `manage.py verify_published`
does one pass by hand (or for chosen runs).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Now

from apps.runs.models import Run, RunStatus, Turn, TurnVerification, VerificationStatus
from apps.runs.selectors import run_queue_of
from worker.engine.timing import SEED_BASE, SEEDS

logger = logging.getLogger(__name__)

VERIFY_TURN = "runs.verify_turn"


def published_runs() -> QuerySet[Run]:
    """Succeeded runs with a valid best turn that anyone can see: public, or in a public experiment."""
    return Run.objects.filter(status=RunStatus.SUCCEEDED, best_turn__valid=True).filter(
        Q(is_public=True) | Q(experiment_link__experiment__is_public=True)
    )


def latest_finished(turn_ref) -> QuerySet[TurnVerification]:
    """The newest finished verification of a turn (`turn_ref`: an id or an OuterRef), as a subquery base."""
    return TurnVerification.objects.filter(turn=turn_ref, finished_at__isnull=False).order_by("-finished_at", "-id")


@dataclass(frozen=True)
class VerificationState:
    """What a page says about a turn's verification."""

    status: str  # "" (never asked), pending, verified, disagrees, failed
    gpu_name: str = ""
    finished_at: object = None
    summary: str = ""
    pending: bool = False  # a newer attempt is on its way

    @property
    def verified(self) -> bool:
        return self.status == VerificationStatus.VERIFIED

    @property
    def label(self) -> str:
        if self.status == VerificationStatus.VERIFIED:
            return f"verified on {self.gpu_name or 'a GPU'}, {self.finished_at:%Y-%m-%d}"
        if self.status == VerificationStatus.DISAGREES:
            return f"verification disagrees: {self.summary}"
        if self.status == VerificationStatus.FAILED:  # the full reason is in `summary` (a tooltip, the admin)
            reason = self.summary.split(". ")[0]
            return f"could not be verified: {reason[:80].rstrip() + '…' if len(reason) > 80 else reason}"
        return "awaiting verification on a GPU worker"


def verification_states(turn_ids) -> dict[int, VerificationState]:
    """The verification state of each turn (one query however many turns)."""
    ids = [t for t in turn_ids if t is not None]
    latest: dict[int, TurnVerification] = {}
    pending: set[int] = set()
    for v in TurnVerification.objects.filter(turn_id__in=ids).only(
            "turn_id", "status", "gpu_name", "finished_at", "summary").order_by("turn_id", "-finished_at", "-id"):
        if v.status == VerificationStatus.PENDING:
            pending.add(v.turn_id)
        elif v.turn_id not in latest:
            latest[v.turn_id] = v
    states = {}
    for turn_id in ids:
        v = latest.get(turn_id)
        if v is None:
            states[turn_id] = VerificationState(VerificationStatus.PENDING if turn_id in pending else "",
                                                pending=turn_id in pending)
        else:
            states[turn_id] = VerificationState(v.status, v.gpu_name, v.finished_at, v.summary, turn_id in pending)
    return states


def fresh_seed_base() -> int:
    """A seed base whose seeds the turn was never evaluated with: not the protocol's fixed range."""
    while True:
        seed = secrets.randbelow(2**31 - 1) + 1
        if not SEED_BASE - SEEDS < seed < SEED_BASE + SEEDS:
            return seed


def verification_dispatch(verification_id: int) -> bool:
    """Send the verification's message to its run's GPU queue; False (and the row left unsent, for the
    next pass) when the broker refused."""
    run_id = TurnVerification.objects.filter(pk=verification_id).values_list("turn__run_id", flat=True).first()
    if run_id is None:
        return False
    try:
        current_app.signature(VERIFY_TURN, args=(verification_id,),
                              options={"queue": run_queue_of(run_id)}).apply_async()
    except Exception as exc:  # noqa: BLE001 - kombu/redis/OS errors alike: the row stays for the next pass
        logger.warning("verification %s not sent, the broker is unreachable (%s: %s); the next pass sends it",
                       verification_id, type(exc).__name__, exc)
        return False
    TurnVerification.objects.filter(pk=verification_id).update(dispatched_at=Now())
    return True


def verification_request(turn: Turn) -> TurnVerification:
    """Ask for a fresh evaluation of the turn; sent after commit. A turn that already has one on its way
    gets that one back instead of a second."""
    with transaction.atomic():
        waiting = turn.verifications.filter(status=VerificationStatus.PENDING).first()
        if waiting is not None:
            return waiting
        verification = TurnVerification.objects.create(turn=turn, seed_base=fresh_seed_base(),
                                                        recorded_score=turn.score)
        transaction.on_commit(lambda: verification_dispatch(verification.pk))
    return verification


@dataclass
class VerifyReport:
    requested: list[int] = field(default_factory=list)  # turn ids asked for the first time
    retried: list[int] = field(default_factory=list)  # turn ids asked again after a verification that could not decide
    resent: list[int] = field(default_factory=list)  # verification ids sent again
    unsent: list[int] = field(default_factory=list)  # the broker refused: left for the next pass

    def __str__(self) -> str:
        return (f"requested {len(self.requested)}, asked again after could-not-verify {len(self.retried)}, "
                f"re-sent {len(self.resent)}, still unsent {len(self.unsent)}")


def verify_published(limit: int | None = None, runs: QuerySet[Run] | None = None) -> VerifyReport:
    """One pass: ask for a verification of every published best turn that has none (at most `limit` per
    pass, oldest runs first), then again for those whose newest one could not decide (_undecided), and re-send
    the verifications that were never delivered or whose worker never answered within VERIFY_RESEND_AFTER_SECONDS."""
    limit = settings.VERIFY_PASS_LIMIT if limit is None else limit
    report = VerifyReport()
    scope = published_runs() if runs is None else runs.filter(pk__in=published_runs().values("pk"))
    unverified = (Turn.objects.filter(pk__in=scope.values("best_turn"))
                  .exclude(Exists(TurnVerification.objects.filter(turn=OuterRef("pk"))))
                  .order_by("run_id")[:limit])
    for turn in unverified:
        verification_request(turn)
        report.requested.append(turn.pk)
    for turn in _undecided(scope)[:max(limit - len(report.requested), 0)]:
        verification_request(turn)
        report.retried.append(turn.pk)
    stale = Now() - timedelta(seconds=settings.VERIFY_RESEND_AFTER_SECONDS)
    for verification_id in TurnVerification.objects.filter(status=VerificationStatus.PENDING).filter(
        Q(dispatched_at__isnull=True, requested_at__lt=Now() - timedelta(seconds=30))
        | Q(dispatched_at__lt=stale)
    ).values_list("pk", flat=True)[:limit]:
        (report.resent if verification_dispatch(verification_id) else report.unsent).append(verification_id)
    return report


def _undecided(scope: QuerySet[Run]) -> QuerySet[Turn]:
    """Published best turns whose newest verification could not decide (status failed: no GPU worker, a GPU that
    slowed itself down, a crash) and finished over VERIFY_RETRY_AFTER_SECONDS ago, with fewer than
    VERIFY_RETRY_LIMIT such attempts and none on its way: a later pass may find a worker, or a GPU at full clock."""
    newest = latest_finished(OuterRef("pk"))
    failed = (TurnVerification.objects.filter(turn=OuterRef("pk"), status=VerificationStatus.FAILED)
              .values("turn").annotate(n=Count("pk")).values("n"))
    return (Turn.objects.filter(pk__in=scope.values("best_turn"))
            .annotate(newest_status=Subquery(newest.values("status")[:1]),
                      newest_finished=Subquery(newest.values("finished_at")[:1]),
                      failed_attempts=Subquery(failed[:1]))
            .filter(newest_status=VerificationStatus.FAILED,
                    newest_finished__lt=Now() - timedelta(seconds=settings.VERIFY_RETRY_AFTER_SECONDS),
                    failed_attempts__lt=settings.VERIFY_RETRY_LIMIT)
            .exclude(Exists(TurnVerification.objects.filter(turn=OuterRef("pk"), status=VerificationStatus.PENDING)))
            .order_by("newest_finished"))


def verified_status_subquery(turn_field: str = "best_turn") -> Subquery:
    """The status of the newest finished verification of `turn_field`, for annotate()."""
    return Subquery(latest_finished(OuterRef(turn_field)).values("status")[:1])


@dataclass(frozen=True)
class VerificationSummary:
    """The verification of a set of runs' best turns, for a table's header (e.g. an experiment's)."""

    total: int
    verified: int
    disagreeing: tuple[tuple[int, str], ...]  # (run id, what the fresh evaluation showed)
    failed: int
    awaiting: int


def verification_summary(runs: QuerySet[Run]) -> VerificationSummary:
    """Of these runs, the succeeded ones with a valid best turn: how many a fresh evaluation confirmed (two queries)."""
    best = dict(runs.filter(status=RunStatus.SUCCEEDED, best_turn__valid=True).values_list("best_turn_id", "pk"))
    states = verification_states(best)
    disagreeing = tuple(sorted((best[t], s.summary) for t, s in states.items() if s.status == "disagrees"))
    return VerificationSummary(
        total=len(best), verified=sum(s.verified for s in states.values()), disagreeing=disagreeing,
        failed=sum(s.status == VerificationStatus.FAILED for s in states.values()),
        awaiting=sum(s.status in ("", VerificationStatus.PENDING) for s in states.values()))
