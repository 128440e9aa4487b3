"""The CUDAMaster optimization loop (paper Algorithm 1), plain Python.

Round 0 evaluates (and profiles) the baseline. Each round i in 1..R: the Planner proposes one
incremental scheme for the best code so far; the Coder rewrites; the Compiler agent proposes an nvcc
command (whitelisted by the engine); the engine checks, times and profiles. An invalid candidate gets
up to D debug rounds (Debug agent diagnoses, Coder fixes). A valid candidate with a higher P becomes
the best; otherwise the Planner hears that its scheme failed and why.

The loop talks to the outside only through a `Sink` (events, turns, agent calls, cancellation) and a
`ChatClient`, so it runs the same under Celery (Django sink), from the CLI (JSON-lines sink) and in tests.
"""

from __future__ import annotations

import difflib
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from worker.agents import budget, prompts
from worker.agents.llm import ChatClient, ContextLengthError, LLMError
from worker.engine.context import TIMING_PROTOCOLS, EvalOptions, with_timing_protocol
from worker.engine.extract import Extraction, extract_command
from worker.engine.results import Evaluation, Verdict
from worker.registry import AnySpec, evaluate, evaluate_baseline, format_of

ROLES = ("planner", "coder", "compiler", "debug")
PROFILE_MODES = ("filtered", "full", "none")



@dataclass(frozen=True)
class PipelineConfig:
    model: str
    rounds: int = 3
    debug_rounds: int = 3
    profile_mode: str = "filtered"
    # "synchronized" or "queued" (worker.engine.context.TIMING_PROTOCOLS): decides eval_options.queued_timing, as
    # profile_mode decides its profile.
    timing_protocol: str = "synchronized"
    agent_models: dict[str, str] = field(default_factory=dict)  # per-role override
    temperature: float = 0.2
    seed: int | None = None
    max_tokens: int = 8192
    use_compiler_agent: bool = True
    time_budget_s: float | None = None
    token_budget: int | None = None
    cost_budget_usd: float | None = None
    eval_options: EvalOptions = field(default_factory=EvalOptions)

    def __post_init__(self):
        if self.rounds < 0 or self.debug_rounds < 0:
            raise ValueError("rounds and debug_rounds must be >= 0")
        if self.profile_mode not in PROFILE_MODES:
            raise ValueError(f"profile_mode must be one of {PROFILE_MODES}, not {self.profile_mode!r}")
        if self.timing_protocol not in TIMING_PROTOCOLS:
            raise ValueError(f"timing_protocol must be one of {TIMING_PROTOCOLS}, not {self.timing_protocol!r}")
        unknown = set(self.agent_models) - set(ROLES)
        if unknown:
            raise ValueError(f"agent_models has unknown roles {sorted(unknown)}; roles are {ROLES}")

    def model_for(self, role: str) -> str:
        return self.agent_models.get(role) or self.model

    def evaluation_options(self) -> EvalOptions:
        """How the pipeline evaluates every turn: eval_options with this run's profile mode and timing protocol."""
        return with_timing_protocol(replace(self.eval_options, profile=self.profile_mode), self.timing_protocol)


@dataclass(frozen=True)
class AgentCallRecord:
    role: str
    model: str
    messages: list[dict[str, str]]
    response: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    error: str = ""
    reasoning: str = ""
    reasoning_tokens: int | None = None
    cached_tokens: int = 0
    context_window: int | None = None  # the model's window when the prompt was fitted to it
    prompt_estimate: int = 0  # our conservative estimate of the prompt's tokens (tokens_in is the server's)
    priced: bool = True  # False: no price for the model, cost_usd 0 means unknown
    estimated_tokens: bool = False
    notes: list[str] = field(default_factory=list)  # what was changed to get an answer (trimmed, dropped, ...)


@dataclass(frozen=True)
class TurnRecord:
    round_index: int
    debug_index: int
    kind: str  # baseline | optimize | debug
    parent: tuple[int, int] | None = None
    scheme: str = ""
    code: str = ""
    compile_command: str = ""
    evaluation: Evaluation | None = None
    verdict: str = ""
    reason: str = ""
    score: float | None = None
    valid: bool = False
    finished: bool = False
    llm_seconds: float = 0.0

    @property
    def key(self) -> tuple[int, int]:
        return (self.round_index, self.debug_index)


class Sink(Protocol):
    """Where the pipeline reports. Every call is made in order, from one thread."""

    def event(self, type: str, payload: dict[str, Any]) -> None: ...

    def turn(self, record: TurnRecord) -> None:
        """Store or update the turn with record.key (called when it starts and when it ends)."""

    def agent_call(self, turn: tuple[int, int], record: AgentCallRecord) -> None: ...

    def cancelled(self) -> bool:
        """True once the user cancelled the run; the pipeline stops at the next step."""


@dataclass(frozen=True)
class PipelineResult:
    status: str  # succeeded | failed | cancelled
    reason: str
    best_turn: tuple[int, int] | None
    best_score: float | None
    baseline: Evaluation | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    llm_seconds: float
    gpu_seconds: float
    wall_seconds: float
    turns: int


class _Stop(Exception):
    """Ends the loop early: cancellation, a budget, or an endpoint that cannot answer."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _gpu_seconds(evaluation: Evaluation | None) -> float:
    """Time in harness runs (check, timing, profile, memcheck): the evaluation less compile and lock waits."""
    if evaluation is None:
        return 0.0
    phases = evaluation.phases
    if "total" in phases:
        return max(0.0, phases["total"] - phases.get("compile", 0.0) - phases.get("lock_wait", 0.0))
    return sum(v for k, v in phases.items() if k not in ("compile", "lock_wait"))


def unified_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=old_name, tofile=new_name
        )
    )


def _baseline_as_results(evaluation: Evaluation):
    """The baseline's sizes as the Planner sees them: speedup 1 against itself."""
    return [replace(size, speedup=1.0, speedup_median=1.0) for size in evaluation.sizes]


def _debug_evidence(evaluation: Evaluation) -> tuple[str, Any]:
    """Which log the Debug agent gets for an invalid candidate (paper Appendix B.4)."""
    verdict = evaluation.verdict
    if verdict == Verdict.COMPILE_ERROR and evaluation.compile is not None:
        return "compile", evaluation.compile.log
    if verdict == Verdict.REJECTED:
        return "rejected", "\n".join(evaluation.static_violations) or evaluation.reason
    if verdict == Verdict.TIMEOUT:
        return "timeout", evaluation.reason
    if verdict == Verdict.RUNTIME_ERROR:
        return "runtime", evaluation.memcheck_log or evaluation.reason
    mismatch = next((s.first_mismatch for s in evaluation.sizes if s.first_mismatch), None)
    if mismatch:
        size = next(s for s in evaluation.sizes if s.first_mismatch)
        return "mismatch", {"size": dict(size.params), **mismatch}
    return "mismatch", evaluation.reason


class Pipeline:
    def __init__(
        self,
        spec: AnySpec,
        precision: str,
        config: PipelineConfig,
        client: ChatClient,
        sink: Sink,
        *,
        hardware: prompts.HardwareInfo | None = None,
        arch: str = "sm_90",
        evaluate_fn: Callable[..., Evaluation] = evaluate,
        evaluate_baseline_fn: Callable[..., Evaluation] = evaluate_baseline,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.spec, self.precision, self.config = spec, precision, config
        self.client, self.sink = client, sink
        self.hardware = hardware or prompts.HardwareInfo(name="unknown GPU")
        self.arch = hardware.arch if hardware and hardware.arch else arch
        self.evaluate_fn, self.evaluate_baseline_fn = evaluate_fn, evaluate_baseline_fn
        self.clock = clock
        self.options = config.evaluation_options()
        self.tokens_in = self.tokens_out = 0
        self.cost = self.llm_seconds = self.gpu_seconds = 0.0
        self.turns = 0
        self.learned_windows: dict[str, int] = {}  # from context-length errors, per model
        self.started = clock()

    # ------------------------------------------------------------------ accounting and limits

    def _check_limits(self) -> None:
        if self.sink.cancelled():
            raise _Stop("cancelled", "cancelled by user")
        cfg = self.config
        if cfg.time_budget_s is not None and self.clock() - self.started > cfg.time_budget_s:
            raise _Stop("succeeded", f"stopped early: the time budget of {cfg.time_budget_s:.0f} s is spent")
        if cfg.token_budget is not None and self.tokens_in + self.tokens_out >= cfg.token_budget:
            raise _Stop("succeeded", f"stopped early: the token budget of {cfg.token_budget} is spent")
        if cfg.cost_budget_usd is not None and self.cost >= cfg.cost_budget_usd:
            raise _Stop("succeeded", f"stopped early: the cost budget of ${cfg.cost_budget_usd:.2f} is spent")

    def _window(self, model: str) -> int | None:
        if model in self.learned_windows:
            return self.learned_windows[model]
        window_of = getattr(self.client, "context_window", None)
        return window_of(model) if callable(window_of) else None

    def _call(self, turn: tuple[int, int], role: str, build: Callable[[budget.PromptLimits], list[dict[str, str]]]):
        """One agent call. `build` renders the prompt under given limits: the context budget picks the first
        step of its trimming policy that fits the model's window; a context-length error from the server
        refits from the next step (to the window the error states) and tries once more."""
        self._check_limits()
        model = self.config.model_for(role)
        self.sink.event("agent.started", {"round": turn[0], "debug": turn[1], "role": role, "model": model})
        notes: list[str] = []
        fitted: budget.FittedPrompt | None = None
        window = self._window(model)
        try:
            fitted = budget.fit(build, window, self.config.max_tokens)
            try:
                answer = self._chat(fitted, model)
            except ContextLengthError as exc:
                notes += list(exc.notes)
                window = exc.window or (fitted.window and fitted.window * 3 // 4) or fitted.estimate * 3 // 4
                self.learned_windows[model] = window  # the next calls to this model fit it from the start
                notes.append(f"the endpoint refused the prompt as too long for its {window:,}-token window; "
                             "trimmed and sent once more")
                fitted = budget.fit(build, window, self.config.max_tokens,
                                    start=min(fitted.level + 1, len(budget.LEVELS) - 1))
                answer = self._chat(fitted, model)
        except (LLMError, budget.ContextBudgetError) as exc:
            message = exc.message if isinstance(exc, LLMError) else str(exc)
            if isinstance(exc, LLMError):
                notes += [n for n in exc.notes if n not in notes]
            if fitted is not None and fitted.note:
                notes.insert(0, fitted.note)
            messages = fitted.messages if fitted is not None else build(limits=budget.LEVELS[0])
            record = AgentCallRecord(role, model, list(messages), error=message, notes=notes,
                                     context_window=fitted.window if fitted else window,
                                     prompt_estimate=fitted.estimate if fitted else 0)
            self.sink.agent_call(turn, record)
            self.sink.event("agent.failed", {"round": turn[0], "debug": turn[1], "role": role, "error": message})
            raise _Stop("failed", f"the {role} agent's LLM call failed: {message}") from None
        notes = ([fitted.note] if fitted.note else []) + notes + [n for n in answer.notes if n not in notes]
        self.tokens_in += answer.tokens_in
        self.tokens_out += answer.tokens_out
        self.cost += answer.cost_usd
        self.llm_seconds += answer.latency_s
        record = AgentCallRecord(
            role, answer.model or model, list(fitted.messages), answer.text, answer.tokens_in, answer.tokens_out,
            answer.cost_usd, answer.latency_s, reasoning=answer.reasoning, reasoning_tokens=answer.reasoning_tokens,
            cached_tokens=answer.cached_tokens, context_window=fitted.window, prompt_estimate=fitted.estimate,
            priced=answer.priced, estimated_tokens=answer.estimated_tokens, notes=notes,
        )
        self.sink.agent_call(turn, record)
        payload = {"round": turn[0], "debug": turn[1], "role": role, "model": record.model,
                   "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out, "cost_usd": answer.cost_usd,
                   "latency_s": round(answer.latency_s, 3), "text": prompts.clip(answer.text, 4000)}
        if notes:
            payload["notes"] = notes
        if answer.reasoning_tokens:
            payload["reasoning_tokens"] = answer.reasoning_tokens
        self.sink.event("agent.finished", payload)
        return answer

    def _chat(self, fitted: budget.FittedPrompt, model: str):
        return self.client.chat(fitted.messages, model=model, temperature=self.config.temperature,
                                max_tokens=fitted.max_tokens, seed=self.config.seed)

    # ------------------------------------------------------------------ steps

    def _emit_turn(self, record: TurnRecord) -> None:
        self.sink.turn(record)
        if not record.finished:
            self.sink.event("turn.started", {"round": record.round_index, "debug": record.debug_index,
                                             "kind": record.kind})
            return
        evaluation = record.evaluation
        payload: dict[str, Any] = {
            "round": record.round_index, "debug": record.debug_index, "kind": record.kind,
            "verdict": record.verdict, "reason": record.reason, "score": record.score, "valid": record.valid,
        }
        if evaluation is not None:
            payload["sizes"] = [
                {"params": s.params, "correct": s.correct, "speedup": s.speedup,
                 "candidate_ms": s.candidate.mean_ms if s.candidate else None,
                 "baseline_ms": s.baseline.mean_ms if s.baseline else None,
                 "cv": s.candidate.cv if s.candidate else (s.baseline.cv if s.baseline else None)}
                for s in evaluation.sizes
            ]
            payload["bottlenecks"] = sorted({str(p.bottleneck) for p in evaluation.profiles})
            payload["flags"] = list(evaluation.flags)
        self.sink.event("turn.finished", payload)

    def _evaluate_candidate(self, key, kind, parent, scheme, code, command, llm_s) -> TurnRecord:
        self.sink.event("compile.started", {"round": key[0], "debug": key[1], "command": command})
        evaluation = self.evaluate_fn(self.spec, self.precision, code, command, self.options)
        self.gpu_seconds += _gpu_seconds(evaluation)
        if evaluation.compile is not None:
            self.sink.event(
                "compile.finished",
                {"round": key[0], "debug": key[1], "ok": evaluation.compile.ok, "command": evaluation.compile.command,
                 "log": prompts.clip(evaluation.compile.log, 4000), "notes": list(evaluation.notes)},
            )
        valid = evaluation.ok and evaluation.score is not None
        return TurnRecord(
            key[0], key[1], kind, parent, scheme, code,
            evaluation.compile.command if evaluation.compile else command, evaluation,
            str(evaluation.verdict), evaluation.reason, evaluation.score, valid, True, llm_s,
        )

    def _write_code(self, key, instructions: str, code: str, fix: bool) -> tuple[str | None, str, float]:
        """Coder (+ Compiler agent): the new source and the proposed command, or None and why not."""
        answer = self._call(key, "coder", lambda limits: prompts.coder_messages(
            task=self.spec, precision=self.precision, hardware=self.hardware, code=code,
            instructions=instructions, fix=fix, limits=limits))
        llm_s = answer.latency_s
        extraction = self._extract(answer.text, answer.finish_reason)
        if not extraction.ok:
            return None, extraction.reason, llm_s
        flags = format_of(self.spec).compile_flags
        if flags is None:
            # The build is the task's own (load_inline, or task.yaml's build command): nothing for the
            # Compiler agent to choose.
            return extraction.code, "", llm_s
        command = "nvcc " + " ".join(flags.default(self.arch))
        if self.config.use_compiler_agent:
            code_out = extraction.code
            reply = self._call(key, "compiler", lambda limits: prompts.compiler_messages(
                hardware=self.hardware, code=code_out, default_command=command,
                allowed_flags=flags.allowed_text, limits=limits))
            llm_s += reply.latency_s
            proposed = extract_command(reply.text)
            if proposed.command:
                command = proposed.command
        return extraction.code, command, llm_s

    def _extract(self, text: str, finish_reason: str | None) -> Extraction:
        """The candidate file out of the Coder's answer, in the task's format."""
        return format_of(self.spec).extract(self.spec, self.precision, text, finish_reason)

    def _attempt(self, key, kind, parent, scheme, base_code, fix) -> TurnRecord:
        code, command_or_reason, llm_s = self._write_code(key, scheme, base_code, fix)
        if code is None:
            return TurnRecord(key[0], key[1], kind, parent, scheme, "", "", None, "no_code",
                              f"the Coder's answer held no usable code: {command_or_reason}", None, False, True, llm_s)
        name = f"turn {key[0]}.{key[1]}"
        parent_name = "baseline" if parent is None or parent == (0, 0) else f"turn {parent[0]}.{parent[1]}"
        self.sink.event("turn.code", {
            "round": key[0], "debug": key[1],
            "diff": unified_diff(base_code, code, parent_name, name),
            "diff_baseline": unified_diff(self.baseline_code, code, "baseline", name),
        })
        return self._evaluate_candidate(key, kind, parent, scheme, code, command_or_reason, llm_s)

    # ------------------------------------------------------------------ the loop

    def run(self) -> PipelineResult:
        baseline_code = self.baseline_code = self.spec.baseline_source(self.precision).read_text(encoding="utf-8")
        best: TurnRecord | None = None
        baseline: Evaluation | None = None
        status, reason = "succeeded", ""
        try:
            self._check_limits()
            start = TurnRecord(0, 0, "baseline", code=baseline_code, scheme="Naive baseline")
            self._emit_turn(start)
            baseline = self.evaluate_baseline_fn(self.spec, self.precision, self.options)
            self.gpu_seconds += _gpu_seconds(baseline)
            if not baseline.ok:
                done = replace(start, evaluation=baseline, verdict=str(baseline.verdict), reason=baseline.reason,
                               finished=True)
                self._emit_turn(done)
                return self._result("failed", f"the baseline could not be evaluated: {baseline.reason}", None,
                                    baseline)
            best = replace(start, evaluation=baseline, verdict=str(baseline.verdict), reason=baseline.reason,
                           score=1.0, valid=True, finished=True)
            self._emit_turn(best)
            self.turns = 1
            best_results = _baseline_as_results(baseline)
            previous_plan = previous_failure = None

            for round_index in range(1, self.config.rounds + 1):
                key = (round_index, 0)
                self._emit_turn(TurnRecord(round_index, 0, "optimize", parent=best.key))
                planner = self._call(key, "planner", functools.partial(
                    prompts.planner_messages, task=self.spec, precision=self.precision, hardware=self.hardware,
                    code=best.code, results=best_results,
                    profiles=best.evaluation.profiles if best.evaluation else None,
                    previous_plan=previous_plan, previous_failure=previous_failure))
                plan = planner.text.strip()
                turn = self._attempt(key, "optimize", best.key, plan, best.code, fix=False)
                turn = replace(turn, llm_seconds=turn.llm_seconds + planner.latency_s)
                self._emit_turn(turn)
                self.turns += 1

                debug_index = 0
                while not turn.valid and debug_index < self.config.debug_rounds:
                    debug_index += 1
                    dkey = (round_index, debug_index)
                    self._emit_turn(TurnRecord(round_index, debug_index, "debug", parent=turn.key))
                    if turn.evaluation is None:  # no code came out: ask the Coder again with the reason
                        diagnosis = f"Your previous answer could not be used: {turn.reason}. Return the complete file."
                        base = turn.code or best.code
                    else:
                        kind, log = _debug_evidence(turn.evaluation)
                        debugger = self._call(dkey, "debug", functools.partial(
                            prompts.debug_messages, task=self.spec, precision=self.precision,
                            hardware=self.hardware, code=turn.code, kind=kind, log=log))
                        diagnosis, base = debugger.text.strip(), turn.code
                    turn = self._attempt(dkey, "debug", turn.key, diagnosis, base, fix=True)
                    self._emit_turn(turn)
                    self.turns += 1

                previous_plan = plan
                if turn.valid and turn.score is not None and turn.score > (best.score or 0):
                    best = turn
                    best_results = list(turn.evaluation.sizes)
                    previous_failure = None
                    self.sink.event("best.updated", {"round": turn.round_index, "debug": turn.debug_index,
                                                     "score": turn.score})
                elif turn.valid:
                    previous_failure = (f"the kernel was correct but not faster: P {turn.score:.3f} "
                                        f"does not beat the best P {best.score:.3f}")
                else:
                    previous_failure = (f"no valid kernel after {debug_index} fix attempt(s); last verdict "
                                        f"{turn.verdict}: {turn.reason}")
        except _Stop as stop:
            status, reason = stop.status, stop.reason
        return self._result(status, reason, best, baseline)

    def _result(self, status, reason, best, baseline) -> PipelineResult:
        return PipelineResult(
            status=status, reason=reason, best_turn=best.key if best else None,
            best_score=best.score if best else None, baseline=baseline,
            tokens_in=self.tokens_in, tokens_out=self.tokens_out, cost_usd=self.cost,
            llm_seconds=self.llm_seconds, gpu_seconds=self.gpu_seconds,
            wall_seconds=self.clock() - self.started, turns=self.turns,
        )
