"""Manual turns: a user's own candidate, evaluated exactly like an agent's and stored as a turn.

On an existing run the turn is appended after the last round; on a task a small run (no rounds,
no model) is created to hold it. Evaluation happens on a GPU worker like any run
(apps/runs/execution.py, `manual_turn_evaluate`); this module only records and queues it.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from apps.runs.dispatch import turn_dispatch
from apps.runs.events import event_append
from apps.runs.models import Run, Turn, TurnKind
from apps.runs.quotas import quota_check_manual_turn, quota_reserve

MAX_SOURCE_BYTES = 256 * 1024  # a kernel file, not a data dump


class ManualTurnError(ValueError):
    pass


def _validate(code: str, flags: str) -> None:
    if not code.strip():
        raise ManualTurnError("the candidate source is empty")
    if len(code.encode()) > MAX_SOURCE_BYTES:
        raise ManualTurnError(f"the candidate source is larger than {MAX_SOURCE_BYTES // 1024} KiB")
    if len(flags) > 1000:
        raise ManualTurnError("the nvcc command is longer than 1000 characters")


def turn_submit_manual(*, run: Run, code: str, flags: str = "", dispatch: bool = True) -> Turn:
    """Append a manual turn to `run` and queue its evaluation once committed."""
    _validate(code, flags)
    with transaction.atomic():
        quota_check_manual_turn(run.owner)  # QuotaExceeded: too many manual turns waiting
        last = run.turns.aggregate(last=Max("round_index"))["last"]
        baseline = run.turns.filter(round_index=0, debug_index=0).first()
        turn = Turn.objects.create(
            run=run, round_index=(last + 1) if last is not None else 1, debug_index=0, kind=TurnKind.MANUAL,
            parent=baseline, code=code, compile_command=flags, verdict="queued", scheme="Submitted by hand",
            dispatch_pending=dispatch,
        )
        event_append(run.pk, "turn.submitted", {"round": turn.round_index, "debug": 0, "kind": "manual"})
        if dispatch:
            transaction.on_commit(lambda: turn_dispatch(turn.pk))
    return turn


def turn_unsent(turn: Turn) -> bool:
    """Whether the broker refused a just-submitted manual turn (it waits for the reconciler)."""
    if transaction.get_connection().in_atomic_block:
        return False  # nothing sent yet inside an outer transaction
    return Turn.objects.filter(pk=turn.pk, dispatch_pending=True).exists()


def run_create_manual(*, owner, task, code: str, flags: str = "", timing_protocol: str = "synchronized",
                      dispatch: bool = True) -> Run:
    """A run holding only a manual turn: "how fast is my kernel for this task?", timed by the protocol chosen."""
    _validate(code, flags)
    with transaction.atomic(), quota_reserve(owner, manual_turns=1):
        run = Run.objects.create(owner=owner, task=task, model="", rounds=0, debug_rounds=0, origin="manual",
                                 profile_mode="none", timing_protocol=timing_protocol, task_revision=task.revision)
        event_append(run.pk, "run.queued", {"task": task.slug, "manual": True})
        turn_submit_manual(run=run, code=code, flags=flags, dispatch=dispatch)
    return run
