"""Load a headless trajectory (worker/agents/trajectory.py) into the database as a finished run.

Turns, agent calls and profiles go through the same DjangoSink a live run uses, so an imported run
looks exactly like one executed here; its events are replayed in their recorded order.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from decimal import Decimal

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from apps.catalog.models import Task
from apps.runs.events import event_append
from apps.runs.execution import DjangoSink
from apps.runs.models import Run, RunStatus, TimingProtocol, TurnVerification, VerificationStatus
from apps.runs.services import run_transition
from worker.agents.pipeline import AgentCallRecord, TurnRecord
from worker.engine.results import Evaluation, MalformedEvaluation


class TrajectoryImportError(ValueError):
    """The trajectory cannot be imported; the message says what to do."""


def _turn(data: dict) -> TurnRecord:
    label = f"turn {data.get('round_index')}.{data.get('debug_index')}" if isinstance(data, dict) else "a turn"
    try:
        fields = {k: v for k, v in data.items() if k in TurnRecord.__dataclass_fields__}
        fields["evaluation"] = Evaluation.from_dict(data["evaluation"]) if data.get("evaluation") else None
        fields["parent"] = tuple(data["parent"]) if data.get("parent") else None
        return TurnRecord(**fields)
    except MalformedEvaluation as exc:  # names its field
        raise TrajectoryImportError(f"{label}: {exc}") from None
    except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a field missing or of the wrong kind
        raise TrajectoryImportError(f"{label} is not a turn this KernelWeb recorded ({type(exc).__name__}: "
                                    f"{exc}); export it again from the run, or fix that field") from None


def _verifications(turn, recorded: list[dict]) -> None:
    """Recreate the turn's finished verifications as they were recorded (when, on which GPU, what they showed)."""
    for v in recorded:
        status, finished = v.get("status"), parse_datetime(str(v.get("finished") or ""))
        if status not in VerificationStatus.values or status == VerificationStatus.PENDING or finished is None:
            raise TrajectoryImportError(f"turn {turn.round_index}.{turn.debug_index}: a verification needs a "
                                        f"finished status and an ISO 8601 'finished' time, got {status!r}, "
                                        f"{v.get('finished')!r}")
        TurnVerification.objects.create(
            turn=turn, status=status, finished_at=finished if timezone.is_aware(finished)
            else timezone.make_aware(finished, datetime.UTC), gpu_name=str(v.get("gpu") or ""),
            seed_base=int(v.get("seed_base") or 0), verdict=str(v.get("verdict") or ""), score=v.get("score"),
            recorded_score=v.get("recorded_score"), summary=str(v.get("summary") or ""),
            results=v.get("results") or [])


def timing_protocol_of(config: dict) -> str:
    """A recorded configuration's timing protocol; one recorded before runs could choose it was synchronized."""
    protocol = config.get("timing_protocol") or TimingProtocol.SYNCHRONIZED
    if protocol not in TimingProtocol.values:
        raise TrajectoryImportError(f"config.timing_protocol must be one of {', '.join(TimingProtocol.values)}, "
                                    f"not {protocol!r}")
    return protocol


def _recorded_at(data: dict) -> datetime.datetime | None:
    """The trajectory's `created` (when its run was recorded), timezone-aware; None when it has none."""
    value = data.get("created")
    if not value:
        return None
    moment = parse_datetime(value) if isinstance(value, str) else None
    if moment is None:
        raise TrajectoryImportError(f"'created' must be an ISO 8601 date and time, got {value!r}")
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, datetime.UTC)


def trajectory_import(data: dict, *, owner, public: bool = False, force: bool = False) -> Run:
    origin = "import:" + hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    existing = Run.objects.filter(origin=origin).first()
    if existing and not force:
        raise TrajectoryImportError(f"this trajectory is already run {existing.pk}; pass --force to import it again")
    task = Task.objects.filter(suite=data["suite"], operator=data["task"], precision=data["precision"]).first()
    if task is None:
        raise TrajectoryImportError(
            f"no task {data['suite']}/{data['task']}/{data['precision']} in the database; run `manage.py sync_tasks`"
        )
    config, result = data["config"], data["result"]
    recorded = _recorded_at(data)
    timing = timing_protocol_of(config)
    with transaction.atomic():
        run = Run.objects.create(
            task=task, owner=owner, is_public=public, origin=origin, model=config.get("model", ""),
            agent_models=config.get("agent_models") or {}, rounds=config.get("rounds", 0),
            debug_rounds=config.get("debug_rounds", 0), profile_mode=config.get("profile_mode", "filtered"),
            timing_protocol=timing,
            temperature=config.get("temperature", 0.0), seed=config.get("seed"),
        )
        event_append(run.pk, "run.queued", {"task": task.slug, "model": run.model, "imported": True})
        run_transition(run.pk, RunStatus.RUNNING, worker_host="imported", gpu_name=data.get("gpu", ""))
        # What a live worker logs on start (execution.run_execute), so pages can show the toolchain.
        event_append(run.pk, "worker.info", {"host": "imported", "gpu": data.get("gpu") or None,
                                             **(data.get("toolchain") or {})})
        sink = DjangoSink(run)
        for turn in data["turns"]:
            record = _turn(turn)
            sink.turn(record)
            for call in turn.get("agent_calls", []):
                sink.agent_call(record.key, AgentCallRecord(**call))
            _verifications(sink.stored(record.key), turn.get("verifications") or [])
        for event in data["events"]:
            sink.event(event["type"], event["payload"])
        best = sink.stored(result.get("best_turn"))
        Run.objects.filter(pk=run.pk).update(
            best_turn=best, best_score=result.get("best_score"), tokens_in=result.get("tokens_in", 0),
            tokens_out=result.get("tokens_out", 0), cost_usd=Decimal(str(round(result.get("cost_usd", 0.0), 6))),
            wall_time_s=result.get("wall_seconds", 0.0), gpu_time_s=result.get("gpu_seconds", 0.0),
            **({"created_at": recorded} if recorded else {}),  # when it was recorded, not when imported
        )
        status = {"succeeded": RunStatus.SUCCEEDED, "cancelled": RunStatus.CANCELLED}.get(
            result.get("status"), RunStatus.FAILED
        )
        run_transition(run.pk, status, error=result.get("reason", "") if status != RunStatus.SUCCEEDED else "")
    run.refresh_from_db()
    return run
