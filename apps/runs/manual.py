"""Manual turns: a user's own candidate, evaluated exactly like an agent's and stored as a turn.

On an existing run the turn is appended after the last round; on a task a small run (no rounds,
no model) is created to hold it. Evaluation happens on a GPU worker like any run.
"""

from __future__ import annotations

import socket

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from apps.runs.events import event_append
from apps.runs.execution import DjangoSink
from apps.runs.models import Run, RunStatus, Turn, TurnKind
from apps.runs.services import run_claim, run_fail, run_transition
from worker.agents.pipeline import TurnRecord
from worker.engine import toolchain
from worker.engine.taskspec import SpecError
from worker.formats.cuda.evaluation import EvalOptions
from worker.registry import evaluate, load_task

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
        last = run.turns.aggregate(last=Max("round_index"))["last"]
        baseline = run.turns.filter(round_index=0, debug_index=0).first()
        turn = Turn.objects.create(
            run=run, round_index=(last + 1) if last is not None else 1, debug_index=0, kind=TurnKind.MANUAL,
            parent=baseline, code=code, compile_command=flags, verdict="queued", scheme="Submitted by hand",
        )
        event_append(run.pk, "turn.submitted", {"round": turn.round_index, "debug": 0, "kind": "manual"})
        if dispatch:
            from apps.runs.tasks import evaluate_manual_turn

            transaction.on_commit(lambda: evaluate_manual_turn.delay(turn.pk))
    return turn


def run_create_manual(*, owner, task, code: str, flags: str = "", dispatch: bool = True) -> Run:
    """A run holding only a manual turn: "how fast is my kernel for this task?"."""
    _validate(code, flags)
    with transaction.atomic():
        run = Run.objects.create(owner=owner, task=task, model="", rounds=0, debug_rounds=0, origin="manual",
                                 profile_mode="none")
        event_append(run.pk, "run.queued", {"task": task.slug, "manual": True})
        turn_submit_manual(run=run, code=code, flags=flags, dispatch=dispatch)
    return run


def manual_turn_evaluate(turn_id: int) -> None:
    turn = Turn.objects.select_related("run__task").get(pk=turn_id)
    run = turn.run
    chain = toolchain.detect()
    standalone = run.origin == "manual"
    if standalone and not run_claim(run.pk, worker_host=socket.gethostname(),
                                    gpu_name=chain.gpu.name if chain.gpu else ""):
        return
    sink = DjangoSink(run)
    key = (turn.round_index, turn.debug_index)
    if baseline := run.turns.filter(round_index=0, debug_index=0).first():
        sink.turns[(0, 0)] = baseline
    try:
        spec = load_task(settings.TASKS_DIR / run.task.spec_path)
    except SpecError as exc:
        run_fail(run.pk, f"the task's spec cannot be read: {exc}")
        return
    parent = (0, 0) if baseline else None
    sink.turn(TurnRecord(*key, "manual", parent, turn.scheme, turn.code, turn.compile_command))
    sink.event("turn.started", {"round": key[0], "debug": key[1], "kind": "manual"})
    evaluation = evaluate(spec, run.task.precision, turn.code, turn.compile_command or None,
                          EvalOptions(profile=run.profile_mode), chain=chain)
    valid = evaluation.ok and evaluation.score is not None
    record = TurnRecord(*key, "manual", parent, turn.scheme, turn.code,
                        evaluation.compile.command if evaluation.compile else turn.compile_command, evaluation,
                        str(evaluation.verdict), evaluation.reason, evaluation.score, valid, True)
    sink.turn(record)
    sink.event("turn.finished", {"round": key[0], "debug": key[1], "kind": "manual", "verdict": record.verdict,
                                 "reason": record.reason, "score": record.score, "valid": valid})
    if valid and (run.best_score is None or evaluation.score > run.best_score):
        Run.objects.filter(pk=run.pk).update(best_turn=sink.turns[key], best_score=evaluation.score)
    if standalone:
        if valid:
            run_transition(run.pk, RunStatus.SUCCEEDED)
        else:
            run_fail(run.pk, f"{record.verdict}: {record.reason}")
