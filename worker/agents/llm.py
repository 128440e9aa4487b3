"""The LLM client: one chat call to any OpenAI-compatible endpoint, with explicit retries and accounting.

The SDK's own retries are off (`max_retries=0`) so the policy lives here, in one place the tests can
drive: rate limits (429, honouring Retry-After), timeouts, connection errors and 5xx are retried with
exponential backoff and jitter; every other refusal (400, 401, 403, 404, ...) fails at once with a
message that says what to fix. Tokens come from the response's `usage` (estimated, and marked so, only
when the endpoint sends none); cost comes from a per-model price table that an operator can override.

Two 400 answers are handled rather than passed on: a parameter the model refuses (`temperature` on a
reasoning model, `max_tokens` where `max_completion_tokens` is wanted) is dropped or renamed and the
request sent again, the model remembered as refusing it (`on_learned` tells the caller, which stores it
per endpoint and model); a context-length error raises `ContextLengthError` with the window it states, for
the pipeline to trim and retry. Reasoning text (a `reasoning_content` or `reasoning` field, or a
`<think>` block) and reasoning tokens are returned beside the answer.

The client enforces no budget: the pipeline adds up `LLMResponse.cost_usd` and stops a run itself.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import openai

from worker.agents.budget import estimate_text_tokens
from worker.agents.llm_errors import (  # noqa: F401 - retry_after_seconds re-exported for callers
    ADAPTABLE_PARAMS,
    classify_error,
    context_length_error,
    error_detail,
    refused_parameter,
    retry_after_seconds,
)
from worker.agents.prices import (  # noqa: F401 - re-exported: callers import prices from here
    DEFAULT_PRICES,
    MODELS_FILE,
    KnownModel,
    ModelPrice,
    PriceTable,
    default_prices,
    known_models,
    match_model,
)

Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


@dataclass(frozen=True)
class LLMResponse:
    text: str
    model: str  # the model the endpoint says answered (falls back to the one asked for)
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_s: float  # wall time of the whole call, retries and backoff included
    attempts: int
    finish_reason: str  # "stop", "length" (hit max tokens), "content_filter", ... or "" if absent
    priced: bool  # False: the model is not in the price table, cost_usd is 0 and means "unknown"
    estimated_tokens: bool  # True: the endpoint sent no usage, the token counts are a rough estimate
    attempt_errors: tuple[str, ...] = ()  # why each failed attempt before the successful one failed
    reasoning: str = ""  # the model's reasoning text, kept apart from the answer
    reasoning_tokens: int | None = None  # usage.completion_tokens_details.reasoning_tokens (part of tokens_out)
    cached_tokens: int = 0  # prompt tokens the server served from its cache (part of tokens_in)
    notes: tuple[str, ...] = ()  # what the client changed to get an answer (a refused parameter dropped, ...)


class LLMError(Exception):
    """A call that produced no answer. `retriable` says whether trying again later could help."""

    def __init__(
        self,
        message: str,
        *,
        retriable: bool,
        attempts: int,
        attempt_errors: tuple[str, ...] = (),
        status: int | None = None,
        notes: tuple[str, ...] = (),
    ):
        super().__init__(message)
        self.message = message
        self.retriable = retriable
        self.attempts = attempts
        self.attempt_errors = attempt_errors
        self.status = status
        self.notes = notes


class ContextLengthError(LLMError):
    """The server refused the prompt as longer than the model's window (`window`, when its text says)."""

    def __init__(self, message: str, *, window: int | None, prompt_tokens: int | None, **kwargs: Any):
        super().__init__(message, retriable=False, **kwargs)
        self.window = window
        self.prompt_tokens = prompt_tokens


class ChatClient(Protocol):
    """What the pipeline needs from an LLM: messages in, one answer (or LLMError) out."""

    def chat(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> LLMResponse: ...

    def context_window(self, model: str) -> int | None:
        """The model's window in tokens, or None when nothing says."""


# ---------------------------------------------------------------------------------------------- retries


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4  # first try included
    base_delay_s: float = 1.0  # backoff before retry k (k = 1, 2, ...) is base * 2**(k-1) ...
    max_delay_s: float = 30.0  # ... capped here
    jitter: float = 0.25  # ... then scaled by a random factor in [1 - jitter, 1 + jitter]
    max_retry_after_s: float = 60.0  # a server's Retry-After is honoured up to this

    def delay(self, retry: int, retry_after: float | None, rand: Callable[[], float] = random.random) -> float:
        if retry_after is not None:
            # The server knows when its window reopens; waiting less would just earn another 429.
            return min(max(retry_after, 0.0), self.max_retry_after_s)
        backoff = min(self.base_delay_s * 2 ** (retry - 1), self.max_delay_s)
        return backoff * (1 + self.jitter * (2 * rand() - 1))


def estimate_tokens(text: str) -> int:
    """The budget's conservative estimate (three characters per token), for endpoints that send no usage."""
    return estimate_text_tokens(text)


_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.S | re.I)


def split_reasoning(text: str) -> tuple[str, str]:
    """(answer, reasoning): `<think>...</think>` blocks (an unclosed one runs to the end) moved aside."""
    if "<think>" not in text.lower():
        return text, ""
    reasoning = "\n\n".join(m.group(1).strip() for m in _THINK.finditer(text))
    return _THINK.sub("", text).strip(), reasoning


@dataclass(frozen=True)
class ModelQuirks:
    """What a server refuses for one model, as learned from its 400 answers (or the shipped data file)."""

    refused: frozenset[str] = frozenset()
    token_limit_field: str | None = None  # None: the client's default


def window_from_listing(entry: Mapping[str, Any]) -> int | None:
    """A model's window from one `GET /models` entry: vLLM says max_model_len, others context_length,
    context_window or max_context_length (sometimes under top_provider / meta)."""
    places = [entry, entry.get("top_provider") or {}, entry.get("meta") or {}]
    for place in places:
        if not isinstance(place, Mapping):
            continue
        for key in ("max_model_len", "context_length", "context_window", "max_context_length", "n_ctx_train"):
            value = place.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


# ---------------------------------------------------------------------------------------------- client


class OpenAIChatClient:
    """ChatClient over the `openai` SDK. `sleep` and `rand` are injectable so tests never wait."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        timeout_s: float = 180.0,
        retry: RetryPolicy = RetryPolicy(),
        prices: PriceTable | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        token_limit_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        quirks: Mapping[str, ModelQuirks] | None = None,
        context_windows: Mapping[str, int] | None = None,
        discover_windows: bool = True,
        on_learned: Callable[[str, ModelQuirks, str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ):
        if not base_url:
            raise ValueError("an LLM endpoint needs a base URL (e.g. https://api.openai.com/v1)")
        if not model:
            raise ValueError("an LLM endpoint needs a model id")
        self.base_url = base_url
        self.model = model
        self.timeout_s = timeout_s
        self.retry = retry
        self.prices = prices or PriceTable()
        self.temperature = temperature
        self.max_tokens = max_tokens
        # o-series models refuse `max_tokens`; most other servers know only it.
        self.token_limit_field = token_limit_field
        self.quirks: dict[str, ModelQuirks] = dict(quirks or {})
        self.context_windows: dict[str, int] = dict(context_windows or {})  # set per endpoint: these win
        self.discover_windows = discover_windows  # else GET /models is never asked
        self._listed: dict[str, int] | None = None
        self.on_learned = on_learned  # (model, quirks, note): the caller stores what was learned
        self._sleep = sleep
        self._rand = rand
        # Local servers (vLLM, llama.cpp) accept any key, but the SDK insists on a non-empty one.
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0
        )

    def chat(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> LLMResponse:
        model = model or self.model
        kwargs: dict[str, Any] = {"model": model, "messages": [dict(m) for m in messages]}
        temperature = self.temperature if temperature is None else temperature
        if temperature is not None:
            kwargs["temperature"] = temperature
        max_tokens = self.max_tokens if max_tokens is None else max_tokens
        quirks = self.quirks_for(model)
        if max_tokens is not None:
            kwargs[quirks.token_limit_field or self.token_limit_field] = max_tokens
        if seed is not None:
            # Best effort: OpenAI and vLLM honour it for repeatable sampling; servers that do not, ignore it.
            kwargs["seed"] = seed
        notes: list[str] = []
        for name in sorted(quirks.refused & set(kwargs)):
            notes.append(f"{name}={kwargs.pop(name)} not sent: {model} refuses it on this endpoint")

        started = time.monotonic()
        errors: list[str] = []
        attempt = adaptations = 0
        while True:
            attempt += 1
            try:
                completion = self._client.chat.completions.create(**kwargs)
            except openai.OpenAIError as exc:
                failure = classify_error(exc, model, self.timeout_s)
                errors.append(f"attempt {attempt}: {failure.message}")
                if isinstance(exc, openai.APIStatusError):
                    refused = refused_parameter(exc, kwargs)
                    if refused and adaptations < len(ADAPTABLE_PARAMS):
                        adaptations += 1
                        notes.append(self._adapt(model, refused, kwargs, error_detail(exc)))
                        continue  # a changed request, not a retry of the same one: no backoff
                    fits = context_length_error(exc)
                    if fits is not None:
                        raise ContextLengthError(
                            f"the prompt does not fit {model}'s context window ({exc.status_code}): "
                            f"{error_detail(exc)}", window=fits[0], prompt_tokens=fits[1], attempts=attempt,
                            attempt_errors=tuple(errors), status=exc.status_code, notes=tuple(notes),
                        ) from exc
                if not failure.retriable:
                    raise LLMError(
                        failure.message, retriable=False, attempts=attempt,
                        attempt_errors=tuple(errors), status=failure.status, notes=tuple(notes),
                    ) from exc
                if attempt >= self.retry.max_attempts:
                    raise LLMError(
                        f"{failure.message} (gave up after {attempt} attempts)", retriable=True, attempts=attempt,
                        attempt_errors=tuple(errors), status=failure.status,
                    ) from exc
                self._sleep(self.retry.delay(attempt, failure.retry_after, self._rand))
                continue
            except ValueError as exc:  # a 200 whose body is not JSON at all (the SDK's own decode error)
                raise LLMError(
                    f"the endpoint answered HTTP 200 with a body that is not a chat completion ({exc}); "
                    "check that the base URL points at an OpenAI-compatible /v1 API",
                    retriable=False, attempts=attempt, attempt_errors=tuple(errors),
                ) from exc
            return self._response(completion, messages, model, attempt, started, tuple(errors), tuple(notes))

    # ------------------------------------------------------------------ what a model accepts, its window

    def quirks_for(self, model: str) -> ModelQuirks:
        if model in self.quirks:
            return self.quirks[model]
        known = match_model(known_models(), model)
        if known is not None and (known.refuses or known.token_limit_field):
            return ModelQuirks(known.refuses, known.token_limit_field)
        return ModelQuirks()

    def _adapt(self, model: str, param: str, kwargs: dict[str, Any], detail: str) -> str:
        """Drop (or rename) a refused parameter in `kwargs`, remember it for the model, say what changed."""
        quirks = self.quirks_for(model)
        value = kwargs.pop(param)
        other = {"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}.get(param)
        if other and (other in detail or param == "max_completion_tokens"):
            kwargs[other] = value
            quirks = ModelQuirks(quirks.refused, other)
            note = f"{model} refused {param}; sent {other}={value} instead"
        else:
            quirks = ModelQuirks(quirks.refused | {param}, quirks.token_limit_field)
            note = f"{model} refused {param}={value}; sent without it"
        self.quirks[model] = quirks
        if self.on_learned is not None:
            self.on_learned(model, quirks, note)
        return note

    def list_models(self) -> list[dict[str, Any]]:
        """`GET /models` as plain dicts (with any extra fields the server adds, e.g. vLLM's max_model_len)."""
        try:
            page = self._client.models.list()
        except openai.OpenAIError as exc:
            failure = classify_error(exc, self.model, self.timeout_s)
            raise LLMError(f"listing the models failed: {failure.message}", retriable=failure.retriable,
                           attempts=1, status=failure.status) from exc
        except ValueError as exc:
            raise LLMError(f"the endpoint's /models answer is not a model list ({exc})", retriable=False,
                           attempts=1) from exc
        return [item.model_dump() if hasattr(item, "model_dump") else dict(item) for item in page.data]

    def context_window(self, model: str) -> int | None:
        """The window set for this endpoint, else what its /models says (asked once), else the data file's."""
        if model in self.context_windows:
            return self.context_windows[model]
        if self.discover_windows and self._listed is None:
            self._listed = {}
            try:
                for entry in self.list_models():
                    window = window_from_listing(entry)
                    if window and entry.get("id"):
                        self._listed[str(entry["id"])] = window
            except LLMError:
                pass  # the window stays unknown: the context-length error is still answered by trimming
        if self._listed and model in self._listed:
            return self._listed[model]
        known = match_model(known_models(), model)
        return known.context_window if known is not None else None

    def _response(
        self,
        completion: Any,
        messages: Sequence[Message],
        asked_model: str,
        attempts: int,
        started: float,
        errors: tuple[str, ...],
        notes: tuple[str, ...] = (),
    ) -> LLMResponse:
        choices = getattr(completion, "choices", None) or []
        if isinstance(completion, str) or not choices:
            raise LLMError(
                "the endpoint answered without any choices (no message to read)"
                + (f": {completion[:200]!r}" if isinstance(completion, str) else "")
                + "; check that the base URL points at an OpenAI-compatible /v1 API",
                retriable=False, attempts=attempts, attempt_errors=errors,
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) or ""
        if not isinstance(text, str):
            raise LLMError(f"the endpoint's message content is not text: {str(text)[:200]!r}",
                           retriable=False, attempts=attempts, attempt_errors=errors)
        # DeepSeek and vLLM send `reasoning_content`, newer vLLM and Ollama `reasoning`; others a <think> block.
        reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None) or ""
        if not isinstance(reasoning, str):
            reasoning = str(reasoning)
        text, thought = split_reasoning(text)
        reasoning = "\n\n".join(r for r in (reasoning.strip(), thought) if r)
        usage = getattr(completion, "usage", None)
        tokens_in = getattr(usage, "prompt_tokens", None)
        tokens_out = getattr(usage, "completion_tokens", None)
        estimated = tokens_in is None or tokens_out is None
        if estimated:
            tokens_in = estimate_tokens("\n".join(str(m.get("content") or "") for m in messages))
            tokens_out = estimate_tokens(text) + estimate_tokens(reasoning)
        details = getattr(usage, "completion_tokens_details", None)
        reasoning_tokens = getattr(details, "reasoning_tokens", None)
        prompt_details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(prompt_details, "cached_tokens", None)
        if cached is None:  # DeepSeek's own field
            cached = (getattr(usage, "model_extra", None) or {}).get("prompt_cache_hit_tokens")
        cached = int(cached) if isinstance(cached, int) else 0
        reasoning_n = int(reasoning_tokens) if isinstance(reasoning_tokens, int) else 0
        answered_by = getattr(completion, "model", None) or asked_model
        # Price by the id we asked for: endpoints often answer with a dated snapshot id.
        cost, priced = self.prices.cost(asked_model, tokens_in, tokens_out, cached, reasoning_n)
        if not priced and answered_by != asked_model:
            cost, priced = self.prices.cost(answered_by, tokens_in, tokens_out, cached, reasoning_n)
        return LLMResponse(
            text=text,
            model=answered_by,
            tokens_in=int(tokens_in),
            tokens_out=int(tokens_out),
            cost_usd=cost,
            latency_s=time.monotonic() - started,
            attempts=attempts,
            finish_reason=str(choice.finish_reason or ""),
            priced=priced,
            estimated_tokens=estimated,
            attempt_errors=errors,
            reasoning=reasoning,
            reasoning_tokens=int(reasoning_tokens) if isinstance(reasoning_tokens, int) else None,
            cached_tokens=cached,
            notes=notes,
        )


@dataclass
class ScriptedChatClient:
    """An in-process ChatClient fed from a list of answers (str or LLMResponse or LLMError), for unit
    tests of code that calls agents; the HTTP-level stand-in is testing/scripted_llm.py."""

    answers: list[str | LLMResponse | LLMError]
    model: str = "scripted"
    calls: list[list[dict[str, str]]] = field(default_factory=list)
    options: list[dict[str, Any]] = field(default_factory=list)  # model, temperature, seed per call
    windows: dict[str, int] = field(default_factory=dict)  # context windows it reports
    max_tokens_sent: list[int | None] = field(default_factory=list)

    def context_window(self, model: str) -> int | None:
        return self.windows.get(model)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> LLMResponse:
        self.calls.append([dict(m) for m in messages])
        self.max_tokens_sent.append(max_tokens)
        self.options.append({"model": model, "temperature": temperature, "seed": seed})
        if not self.answers:
            raise LLMError("the scripted client has no answers left", retriable=False, attempts=1)
        answer = self.answers.pop(0)
        if isinstance(answer, LLMError):
            raise answer
        if isinstance(answer, LLMResponse):
            return answer
        prompt = "\n".join(str(m.get("content") or "") for m in messages)
        return LLMResponse(
            text=answer, model=model or self.model, tokens_in=estimate_tokens(prompt),
            tokens_out=estimate_tokens(answer), cost_usd=0.0, latency_s=0.0, attempts=1,
            finish_reason="stop", priced=False, estimated_tokens=True,
        )
