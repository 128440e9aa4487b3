"""A finished run as a trajectory (worker/agents/trajectory.py, version 1): the inverse of trajectory_import.py.

`trajectory_export(run)` gives the document `manage.py import_trajectory` reads, so a run made on one
installation (a GPU host running the whole stack, for instance) can be loaded into another as demo data.
Each turn's evaluation is rebuilt from what the database keeps of it (results per size, compile log and
ptxas resources, PTX/SASS, profiles, phase times); importing the document stores the same rows again.
The events are the pipeline's own; those the import recreates itself (queued, status changes, the
worker's description) are left out.
"""

from __future__ import annotations

import datetime

from apps.runs.models import Run, Turn, TurnAssembly
from worker.agents.trajectory import FORMAT, VERSION
from worker.engine.results import Verdict

# Events trajectory_import appends on its own (run_create / run_transition / the worker's start).
_RECREATED = frozenset({"run.queued", "run.running", "run.succeeded", "run.failed", "run.cancelled",
                        "run.requeued", "worker.info"})
_VERDICTS = frozenset(v.value for v in Verdict)


def _key(turn: Turn | None) -> list[int] | None:
    return [turn.round_index, turn.debug_index] if turn is not None else None


def _assembly(turn: Turn) -> TurnAssembly | None:
    try:
        return turn.assembly
    except TurnAssembly.DoesNotExist:
        return None


def _evaluation(run: Run, turn: Turn) -> dict | None:
    """The Evaluation.to_dict() the turn was stored from, as far as the database keeps it; None for a turn
    that never reached the engine (no code came out of the Coder's answer)."""
    if turn.verdict not in _VERDICTS:
        return None
    compile_result = None
    if turn.compile_log or "kernels" in (turn.ptxas or {}):
        listing = _assembly(turn)
        compile_result = {
            "role": "baseline" if turn.kind == "baseline" else "candidate",
            "ok": turn.verdict != Verdict.COMPILE_ERROR,
            "command": turn.compile_command,
            "log": turn.compile_log,
            "resources": list((turn.ptxas or {}).get("kernels", [])),
            "ptx": listing.ptx if listing else "",
            "sass": listing.sass if listing else "",
            "assembly_note": listing.note if listing else "",
        }
    profiles = [
        {"size_index": p.size_index, "params": p.size, "kernel": p.kernel, "bottleneck": p.bottleneck,
         "metrics": p.filtered_metrics, "full_metrics": p.full_metrics, "mode": run.profile_mode,
         "tool_version": p.tool_version, "gpu": p.gpu_name}
        for p in turn.profiles.all()
    ]
    return {
        "task": run.task.operator,
        "precision": run.task.precision,
        "verdict": turn.verdict,
        "reason": turn.reason,
        "kind": "baseline" if turn.kind == "baseline" else "candidate",
        "sizes": list(turn.results or []),
        "notes": list(turn.notes or []),
        "score": turn.score,
        "compile": compile_result,
        "profiles": profiles,
        "gpu": run.gpu_name,
        "phases": {"compile": turn.compile_seconds, "check": turn.eval_seconds, "profile": turn.profile_seconds},
    }


def _turn(run: Run, turn: Turn) -> dict:
    return {
        "round_index": turn.round_index,
        "debug_index": turn.debug_index,
        "kind": turn.kind,
        "parent": _key(turn.parent),
        "scheme": turn.scheme,
        "code": turn.code,
        "compile_command": turn.compile_command,
        "evaluation": _evaluation(run, turn),
        "verdict": turn.verdict,
        "reason": turn.reason,
        "score": turn.score,
        "valid": turn.valid,
        "finished": True,
        "llm_seconds": turn.llm_seconds,
        "agent_calls": [
            {"role": c.role, "model": c.model, "messages": c.messages, "response": c.response,
             "tokens_in": c.tokens_in, "tokens_out": c.tokens_out, "cost_usd": float(c.cost_usd),
             "latency_s": c.latency_s, "error": c.error, "reasoning": c.reasoning,
             "reasoning_tokens": c.reasoning_tokens, "cached_tokens": c.cached_tokens,
             "context_window": c.context_window, "prompt_estimate": c.prompt_estimate, "priced": c.priced,
             "estimated_tokens": c.estimated_tokens, "notes": list(c.notes)}
            for c in turn.agent_calls.order_by("created_at", "id")
        ],
        # Finished fresh evaluations of the turn (apps/runs/verification.py), oldest first.
        "verifications": [
            {"status": v.status, "gpu": v.gpu_name, "finished": v.finished_at.isoformat(timespec="seconds"),
             "seed_base": v.seed_base, "verdict": v.verdict, "score": v.score, "recorded_score": v.recorded_score,
             "summary": v.summary, "results": v.results}
            for v in turn.verifications.filter(finished_at__isnull=False).order_by("finished_at", "id")
        ],
    }


def trajectory_export(run: Run) -> dict:
    """The run as a trajectory document; `origin` (ignored by the import) says where it came from."""
    run = Run.objects.select_related("task", "best_turn").get(pk=run.pk)
    turns = list(run.turns.select_related("parent").prefetch_related("profiles").order_by("round_index",
                                                                                            "debug_index"))
    events = list(run.events.order_by("seq").values_list("type", "payload"))
    info = next((payload for type, payload in events if type == "worker.info"), {}) or {}
    notes = [payload.get("note", "") for type, payload in events if type == "run.note"]
    reason = run.error if run.status != "succeeded" else (notes[-1] if notes else "")
    return {
        "format": FORMAT,
        "version": VERSION,
        "task": run.task.operator,
        "suite": run.task.suite,
        "precision": run.task.precision,
        "config": {
            "model": run.model, "rounds": run.rounds, "debug_rounds": run.debug_rounds,
            "profile_mode": run.profile_mode, "timing_protocol": run.timing_protocol,
            "agent_models": run.agent_models or {},
            "temperature": run.temperature, "seed": run.seed, "time_budget_s": run.time_budget_s,
            "token_budget": run.token_budget,
            "cost_budget_usd": float(run.cost_budget_usd) if run.cost_budget_usd is not None else None,
        },
        "gpu": run.gpu_name,
        "toolchain": {k: v for k, v in info.items() if k not in ("host", "gpu")},
        "created": (run.created_at or datetime.datetime.now(datetime.UTC)).isoformat(timespec="seconds"),
        "result": {
            "status": run.status, "reason": reason, "best_turn": _key(run.best_turn),
            "best_score": run.best_score, "tokens_in": run.tokens_in, "tokens_out": run.tokens_out,
            "cost_usd": float(run.cost_usd), "llm_seconds": sum(t.llm_seconds for t in turns),
            "gpu_seconds": run.gpu_time_s, "wall_seconds": run.wall_time_s, "turns": len(turns),
        },
        "turns": [_turn(run, t) for t in turns],
        "events": [{"type": type, "payload": payload} for type, payload in events if type not in _RECREATED],
        "origin": {"run": run.pk, "worker_host": run.worker_host},
    }
