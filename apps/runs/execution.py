"""What a GPU worker does with a job it received: a run's pipeline, one manual turn's evaluation, or the
verification of a published turn (a fresh evaluation with unseen seeds, apps/runs/verification.py).

Both start the same way (apps/runs/jobs.py: claim or reclaim, GPU, task, revision, time limit and
crash guard). A redelivered message (acks_late after a worker crash) finds the run no longer queued and
does nothing: the claim is the idempotency guard. The pipeline itself is Django-free
(worker/agents/pipeline.py); `DjangoSink` turns what it reports into Turn, AgentCall and Profile rows
and RunEvents.
"""

from __future__ import annotations

import functools
import logging
import time
from decimal import Decimal

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.db.models.functions import Now

from apps.llm.services import client_for
from apps.llm.ssrf import check_base_url
from apps.runs.events import event_append
from apps.runs.fairness import fair_share_defer
from apps.runs.jobs import job_guard, job_start
from apps.runs.models import (
    AgentCall,
    Profile,
    Run,
    RunStatus,
    Turn,
    TurnAssembly,
    TurnVerification,
    VerificationStatus,
)
from apps.runs.services import run_fail, run_transition
from worker.agents.llm import OpenAIChatClient
from worker.agents.pipeline import AgentCallRecord, Pipeline, PipelineConfig, PipelineResult, TurnRecord
from worker.agents.prompts import HardwareInfo
from worker.engine.context import with_timing_protocol
from worker.engine.verification import compare, fresh_options
from worker.formats.cuda.evaluation import EvalOptions
from worker.registry import evaluate

logger = logging.getLogger(__name__)


def db_retry(fn):
    """Retry a database step while the database is briefly unreachable (a restart, a failover, a network
    blip), for up to WORKER_DB_RETRY_SECONDS. Each step is one transaction, so a failed attempt leaves
    nothing half-written; the broken connection is dropped so that the next attempt reconnects."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        deadline = time.monotonic() + settings.WORKER_DB_RETRY_SECONDS
        delay = 0.25
        while True:
            try:
                return fn(*args, **kwargs)
            except (OperationalError, InterfaceError) as exc:
                if connection.in_atomic_block or time.monotonic() + delay > deadline:
                    raise  # an outer transaction must fail as a whole; or we waited long enough
                logger.warning("database unavailable during %s (%s); retrying in %.2f s", fn.__name__, exc, delay)
                connection.close()
                time.sleep(delay)
                delay = min(delay * 2, 4.0)

    return wrapper


class DjangoSink:
    """Stores each pipeline report, then appends its event (published after commit). Every report is
    retried while the database is briefly unavailable (`db_retry`)."""

    def __init__(self, run: Run):
        self.run = run
        self.turns: dict[tuple[int, int], Turn] = {}

    @db_retry
    def resume(self) -> None:
        """Know the turns already stored for the run (a manual turn appended to it later has a parent)."""
        self.turns.update({(t.round_index, t.debug_index): t for t in Turn.objects.filter(run=self.run)})

    def stored(self, key: tuple[int, int] | None) -> Turn | None:
        """The Turn row stored for a (round, debug) key, if any."""
        return self.turns.get(tuple(key)) if key else None

    @db_retry
    def offer_best(self, key: tuple[int, int], score: float) -> bool:
        """Make the stored turn `key` the run's best if it beats the current best; True if it did."""
        better = Q(best_score__isnull=True) | Q(best_score__lt=score)
        return bool(Run.objects.filter(better, pk=self.run.pk).update(best_turn=self.turns[key], best_score=score))

    @db_retry
    def event(self, type: str, payload: dict) -> None:
        event_append(self.run.pk, type, payload)

    @db_retry
    def turn(self, record: TurnRecord) -> None:
        evaluation = record.evaluation
        values = {
            "kind": record.kind,
            "parent": self.turns.get(record.parent) if record.parent else None,
            "scheme": record.scheme,
            "code": record.code,
            "compile_command": record.compile_command,
            "verdict": record.verdict,
            "reason": record.reason,
            "score": record.score,
            "valid": record.valid,
            "llm_seconds": record.llm_seconds,
        }
        if evaluation is not None:
            compile_result = evaluation.compile
            values.update(
                compile_log=compile_result.log if compile_result else "",
                ptxas={"kernels": [r.to_dict() for r in compile_result.resources]} if compile_result else {},
                results=[s.to_dict() for s in evaluation.sizes],
                notes=list(evaluation.notes),
                compile_seconds=evaluation.phases.get("compile", 0.0),
                eval_seconds=sum(evaluation.phases.get(k, 0.0) for k in ("check", "time", "memcheck")),
                profile_seconds=evaluation.phases.get("profile", 0.0),
            )
        with transaction.atomic():
            turn, _ = Turn.objects.update_or_create(
                run=self.run, round_index=record.round_index, debug_index=record.debug_index, defaults=values
            )
            listing = evaluation.compile if evaluation is not None else None
            if listing is not None and (listing.ptx or listing.sass or listing.assembly_note):
                TurnAssembly.objects.update_or_create(turn=turn, defaults={
                    "ptx": listing.ptx, "sass": listing.sass, "note": listing.assembly_note[:500]})
            if evaluation is not None and record.finished:
                turn.profiles.all().delete()
                Profile.objects.bulk_create(
                    Profile(
                        turn=turn, size_index=p.size_index, size=p.params, kernel=p.kernel,
                        bottleneck=str(p.bottleneck), filtered_metrics=p.metrics, full_metrics=p.full_metrics,
                        tool_version=p.tool_version, gpu_name=p.gpu,
                    )
                    for p in evaluation.profiles
                )
        self.turns[record.key] = turn

    @db_retry
    def agent_call(self, turn: tuple[int, int], record: AgentCallRecord) -> None:
        AgentCall.objects.create(
            turn=self.turns[turn], role=record.role, model=record.model, messages=record.messages,
            response=record.response, tokens_in=record.tokens_in, tokens_out=record.tokens_out,
            cost_usd=Decimal(str(round(record.cost_usd, 6))), latency_s=record.latency_s, error=record.error,
            reasoning=record.reasoning, reasoning_tokens=record.reasoning_tokens, cached_tokens=record.cached_tokens,
            context_window=record.context_window, prompt_estimate=record.prompt_estimate, priced=record.priced,
            estimated_tokens=record.estimated_tokens, notes=list(record.notes),
        )

    @db_retry
    def cancelled(self) -> bool:
        return Run.objects.filter(pk=self.run.pk, status=RunStatus.CANCELLED).exists()


def _client(run: Run) -> OpenAIChatClient:
    endpoint = run.endpoint
    if endpoint is None:
        raise ValueError("the run has no LLM endpoint; add one in the admin (LLM endpoints) and launch again")
    check_base_url(endpoint.base_url)  # again here: DNS may have changed since it was saved (UnsafeEndpoint)
    # The endpoint's own prices, windows and learned refusals; what the run learns is stored back.
    return client_for(endpoint, run.model, timeout_s=settings.LLM_TIMEOUT_SECONDS)


def pipeline_config(run: Run) -> PipelineConfig:
    """The run's configuration as the pipeline takes it (its evaluation_options: profile mode, timing protocol)."""
    return PipelineConfig(
        model=run.model, rounds=run.rounds, debug_rounds=run.debug_rounds, profile_mode=run.profile_mode,
        timing_protocol=run.timing_protocol, agent_models=run.agent_models or {}, temperature=run.temperature,
        seed=run.seed, time_budget_s=run.time_budget_s, token_budget=run.token_budget,
        cost_budget_usd=float(run.cost_budget_usd) if run.cost_budget_usd is not None else None,
    )


@db_retry
def _finish(run: Run, sink: DjangoSink, result: PipelineResult) -> None:
    best = sink.stored(result.best_turn)
    totals = {
        "best_turn": best, "best_score": result.best_score, "tokens_in": result.tokens_in,
        "tokens_out": result.tokens_out, "cost_usd": Decimal(str(round(result.cost_usd, 6))),
        "wall_time_s": result.wall_seconds, "gpu_time_s": result.gpu_seconds,
    }
    Run.objects.filter(pk=run.pk).update(**totals)
    if result.status == "cancelled":
        return  # the cancel itself already moved the run and logged the event
    target = RunStatus.SUCCEEDED if result.status == "succeeded" else RunStatus.FAILED
    run_transition(run.pk, target, error=result.reason if target == RunStatus.FAILED else "")
    if result.reason and target == RunStatus.SUCCEEDED:
        event_append(run.pk, "run.note", {"note": result.reason})


def run_execute(run_id: int) -> None:
    if fair_share_defer(run_id):  # its owner holds their share of the GPUs while others wait
        return
    job = job_start(run_id)
    if job is None:
        return
    run = job.run
    try:
        client = _client(run)
        config = pipeline_config(run)
    except ValueError as exc:
        run_fail(run_id, f"cannot start the pipeline: {exc}")
        return
    sink = DjangoSink(run)
    with job_guard(run_id, "pipeline"):
        result = Pipeline(job.spec, run.task.precision, config, client, sink,
                          hardware=HardwareInfo.from_gpu(job.gpu), arch=job.chain.arch).run()
        _finish(run, sink, result)


def turn_options(run: Run) -> EvalOptions:
    """How a manual turn on the run is evaluated: the run's profile mode and timing protocol."""
    return with_timing_protocol(EvalOptions(profile=run.profile_mode), run.timing_protocol)


def verification_options(run: Run, seed_base: int) -> EvalOptions:
    """How a turn of the run is verified (fresh_options) under the run's own timing protocol: a queued P is
    compared with a queued P, a synchronized one with a synchronized one."""
    return fresh_options(seed_base, base=with_timing_protocol(EvalOptions(), run.timing_protocol))


def manual_turn_evaluate(turn_id: int) -> None:
    """Evaluate a manual turn. On a run of its own (origin "manual") the run is claimed and ends with the
    turn; on an existing run only the turn is evaluated, and a failure before the evaluation is
    recorded on the turn, not on the run."""
    turn = Turn.objects.select_related("run").get(pk=turn_id)
    run = turn.run
    # a run of its own is claimed by its first turn; a later turn on it, once it has ended, is evaluated like
    # a turn on any run (claiming an ended run does nothing, which left that turn "queued" for good)
    standalone = run.origin == "manual" and run.is_active
    sink = DjangoSink(run)
    sink.resume()
    key = (turn.round_index, turn.debug_index)
    parent = (0, 0) if sink.stored((0, 0)) else None

    def fail(message: str, verdict: str) -> None:
        if standalone:
            run_fail(run.pk, message)
        sink.turn(TurnRecord(*key, "manual", parent, turn.scheme, turn.code, turn.compile_command,
                             verdict=verdict, reason=message, finished=True))
        sink.event("turn.finished", {"round": key[0], "debug": key[1], "kind": "manual", "verdict": verdict,
                                     "reason": message, "score": None, "valid": False})

    job = job_start(run.pk, claim=standalone, fail=fail)
    if job is None:
        return
    with job_guard(run.pk, "manual turn's evaluation", fail):
        sink.turn(TurnRecord(*key, "manual", parent, turn.scheme, turn.code, turn.compile_command))
        sink.event("turn.started", {"round": key[0], "debug": key[1], "kind": "manual"})
        evaluation = evaluate(job.spec, job.run.task.precision, turn.code, turn.compile_command or None,
                              turn_options(job.run), chain=job.chain)
        valid = evaluation.ok and evaluation.score is not None
        finished = TurnRecord(*key, "manual", parent, turn.scheme, turn.code,
                              evaluation.compile.command if evaluation.compile else turn.compile_command,
                              evaluation, str(evaluation.verdict), evaluation.reason, evaluation.score, valid, True)
        sink.turn(finished)
        sink.event("turn.finished", {"round": key[0], "debug": key[1], "kind": "manual",
                                     "verdict": finished.verdict, "reason": finished.reason,
                                     "score": finished.score, "valid": valid})
        if valid:
            sink.offer_best(key, evaluation.score)
        if standalone:
            if valid:
                run_transition(run.pk, RunStatus.SUCCEEDED)
            else:
                run_fail(run.pk, f"{finished.verdict}: {finished.reason}")


def _verification_finish(verification_id: int, turn: Turn, **fields) -> bool:
    """Record the outcome once (a redelivered message finds the row finished and changes nothing)."""
    done = TurnVerification.objects.filter(pk=verification_id, status=VerificationStatus.PENDING).update(
        finished_at=Now(), **fields)
    if done:
        event_append(turn.run_id, "turn.verified", {
            "round": turn.round_index, "debug": turn.debug_index, "status": fields["status"],
            "gpu": fields.get("gpu_name", ""), "score": fields.get("score"), "summary": fields.get("summary", "")})
    return bool(done)


def turn_verify(verification_id: int) -> None:
    """Evaluate a published turn again in this fresh worker process: the verification's own seeds, no cached
    baseline time, profiled so the reported times are cross-checked against Nsight Compute's kernel durations
    from a separate process (docs/threat-model.md); the engine decides whether the result confirms the record."""
    verification = TurnVerification.objects.select_related("turn__run__task").filter(pk=verification_id).first()
    if verification is None or verification.status != VerificationStatus.PENDING:
        return
    turn = verification.turn
    run = turn.run

    def fail(message: str, verdict: str) -> None:
        _verification_finish(verification_id, turn, status=VerificationStatus.FAILED, verdict=verdict,
                             summary=message)

    job = job_start(run.pk, claim=False, fail=fail)
    if job is None:
        return
    with job_guard(run.pk, "verification", fail):
        options = verification_options(run, verification.seed_base)
        evaluation = evaluate(job.spec, run.task.precision, turn.code, turn.compile_command or None, options,
                              chain=job.chain)
        agreement = compare(turn.verdict, turn.score, run.gpu_name, evaluation, settings.VERIFY_SCORE_TOLERANCE)
        _verification_finish(
            verification_id, turn, status=str(agreement.outcome), gpu_name=evaluation.gpu or job.gpu.name,
            verdict=str(evaluation.verdict), score=evaluation.score, summary=agreement.summary,
            results=[size.to_dict() for size in evaluation.sizes])
