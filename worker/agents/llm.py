"""The LLM client: one chat call to any OpenAI-compatible endpoint, with explicit retries and accounting.

The SDK's own retries are off (`max_retries=0`) so the policy lives here, in one place the tests can
drive: rate limits (429, honouring Retry-After), timeouts, connection errors and 5xx are retried with
exponential backoff and jitter; every other refusal (400, 401, 403, 404, ...) fails at once with a
message that says what to fix. Tokens come from the response's `usage` (estimated, and marked so, only
when the endpoint sends none); cost comes from a per-model price table that an operator can override.

The client enforces no budget: the pipeline adds up `LLMResponse.cost_usd` and stops a run itself.
"""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import openai

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
    priced: bool  # False: the model is not in the price table, cost_usd is 0
    estimated_tokens: bool  # True: the endpoint sent no usage, the token counts are a rough estimate
    attempt_errors: tuple[str, ...] = ()  # why each failed attempt before the successful one failed


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
    ):
        super().__init__(message)
        self.message = message
        self.retriable = retriable
        self.attempts = attempts
        self.attempt_errors = attempt_errors
        self.status = status


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


# ---------------------------------------------------------------------------------------------- prices


@dataclass(frozen=True)
class ModelPrice:
    input_per_m: float  # USD per 1M prompt tokens
    output_per_m: float  # USD per 1M completion tokens


# List prices (USD per 1M tokens, uncached input) when this table was written; they change, so an
# operator overrides them with a JSON file (see PriceTable.load) rather than editing code.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gpt-4o": ModelPrice(2.50, 10.00),
    "gpt-4o-mini": ModelPrice(0.15, 0.60),
    "gpt-4.1": ModelPrice(2.00, 8.00),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40),
    "o3": ModelPrice(2.00, 8.00),
    "o4-mini": ModelPrice(1.10, 4.40),
    "deepseek-chat": ModelPrice(0.28, 0.42),
    "deepseek-reasoner": ModelPrice(0.28, 0.42),
}


class PriceTable:
    """Model id -> price. A dated or provider-prefixed id ("gpt-4o-2024-08-06", "openai/gpt-4o")
    falls back to the longest listed id it extends, so a new snapshot is priced like its family."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None):
        self._prices = dict(DEFAULT_PRICES if prices is None else prices)

    @classmethod
    def load(cls, overrides: str | Path | Mapping[str, Any] | None = None) -> PriceTable:
        """The default table updated from a JSON file path or a dict of
        `{"model": {"input": 1.0, "output": 2.0}}` (or `{"model": [1.0, 2.0]}`), USD per 1M tokens."""
        prices = dict(DEFAULT_PRICES)
        if overrides is None:
            return cls(prices)
        if isinstance(overrides, (str, Path)):
            path = Path(overrides)
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise ValueError(f"price file {path} does not exist") from None
            except json.JSONDecodeError as exc:
                raise ValueError(f"price file {path} is not valid JSON: {exc}") from None
            where = str(path)
        else:
            data, where = overrides, "price overrides"
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object of model id -> price")
        for model, raw in data.items():
            prices[str(model)] = _parse_price(raw, f"{where}: {model!r}")
        return cls(prices)

    def price(self, model: str) -> ModelPrice | None:
        if model in self._prices:
            return self._prices[model]
        bare = model.rsplit("/", 1)[-1]
        candidates = [m for m in self._prices if bare == m or bare.startswith(m + "-")]
        return self._prices[max(candidates, key=len)] if candidates else None

    def cost(self, model: str, tokens_in: int, tokens_out: int) -> tuple[float, bool]:
        """(USD, priced). An unknown model costs 0 and is reported as unpriced, never guessed."""
        price = self.price(model)
        if price is None:
            return 0.0, False
        return (tokens_in * price.input_per_m + tokens_out * price.output_per_m) / 1_000_000, True

    def as_dict(self) -> dict[str, ModelPrice]:
        return dict(self._prices)


def _parse_price(raw: Any, where: str) -> ModelPrice:
    if isinstance(raw, Mapping):
        values = (raw.get("input"), raw.get("output"))
    elif isinstance(raw, (list, tuple)) and len(raw) == 2:
        values = (raw[0], raw[1])
    else:
        raise ValueError(f'{where}: expected {{"input": x, "output": y}} or [x, y] in USD per 1M tokens')
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{where}: prices must be numbers >= 0, got {raw!r}")
    return ModelPrice(float(values[0]), float(values[1]))


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


def retry_after_seconds(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date; None if absent/unreadable."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


@dataclass(frozen=True)
class _Failure:
    message: str
    retriable: bool
    status: int | None = None
    retry_after: float | None = None


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])[:500]
        if isinstance(inner, str):
            return inner[:500]
    text = ""
    try:
        text = exc.response.text
    except Exception:  # noqa: BLE001 - the body is only decoration for the message
        pass
    return (text or exc.message or "").strip()[:500]


def _classify(exc: openai.OpenAIError, model: str, timeout_s: float) -> _Failure:
    # Order matters: APITimeoutError is an APIConnectionError, and status errors are APIErrors.
    if isinstance(exc, openai.APITimeoutError):
        return _Failure(f"the request timed out after {timeout_s:g}s", True)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return _Failure(f"could not reach the endpoint: {cause or exc.message}", True)
    if isinstance(exc, openai.APIStatusError):
        status, detail = exc.status_code, _error_detail(exc)
        suffix = f": {detail}" if detail else ""
        if status == 429:
            after = retry_after_seconds(exc.response.headers)
            return _Failure(f"rate limited by the endpoint (429){suffix}", True, status, after)
        if status >= 500:
            return _Failure(f"the endpoint had a server error ({status}){suffix}", True, status)
        if status == 401:
            return _Failure(f"the endpoint rejected the API key; update it in the admin (401){suffix}", False, status)
        if status == 403:
            return _Failure(
                f"the API key may not use this endpoint or model '{model}' (403){suffix}", False, status
            )
        if status == 404:
            return _Failure(
                f"not found (404): check the endpoint's base URL and the model id '{model}'{suffix}", False, status
            )
        if status == 400:
            return _Failure(f"the endpoint rejected the request as invalid (400){suffix}", False, status)
        return _Failure(f"the endpoint refused the request ({status}){suffix}", False, status)
    return _Failure(f"the OpenAI client failed: {exc}", False)


def estimate_tokens(text: str) -> int:
    """About four characters per token for English and code: good enough to keep a budget honest."""
    return max(1, round(len(text) / 4)) if text else 0


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
        if max_tokens is not None:
            kwargs[self.token_limit_field] = max_tokens
        if seed is not None:
            # Best effort: OpenAI and vLLM honour it for repeatable sampling; servers that do not, ignore it.
            kwargs["seed"] = seed

        started = time.monotonic()
        errors: list[str] = []
        attempt = 0
        while True:
            attempt += 1
            try:
                completion = self._client.chat.completions.create(**kwargs)
            except openai.OpenAIError as exc:
                failure = _classify(exc, model, self.timeout_s)
                errors.append(f"attempt {attempt}: {failure.message}")
                if not failure.retriable:
                    raise LLMError(
                        failure.message, retriable=False, attempts=attempt,
                        attempt_errors=tuple(errors), status=failure.status,
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
            return self._response(completion, messages, model, attempt, started, tuple(errors))

    def _response(
        self,
        completion: Any,
        messages: Sequence[Message],
        asked_model: str,
        attempts: int,
        started: float,
        errors: tuple[str, ...],
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
        usage = getattr(completion, "usage", None)
        tokens_in = getattr(usage, "prompt_tokens", None)
        tokens_out = getattr(usage, "completion_tokens", None)
        estimated = tokens_in is None or tokens_out is None
        if estimated:
            tokens_in = estimate_tokens("\n".join(str(m.get("content") or "") for m in messages))
            tokens_out = estimate_tokens(text)
        answered_by = getattr(completion, "model", None) or asked_model
        # Price by the id we asked for: endpoints often answer with a dated snapshot id.
        cost, priced = self.prices.cost(asked_model, tokens_in, tokens_out)
        if not priced and answered_by != asked_model:
            cost, priced = self.prices.cost(answered_by, tokens_in, tokens_out)
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
        )


@dataclass
class ScriptedChatClient:
    """An in-process ChatClient fed from a list of answers (str or LLMResponse or LLMError), for unit
    tests of code that calls agents; the HTTP-level stand-in is testing/scripted_llm.py."""

    answers: list[str | LLMResponse | LLMError]
    model: str = "scripted"
    calls: list[list[dict[str, str]]] = field(default_factory=list)
    options: list[dict[str, Any]] = field(default_factory=list)  # model, temperature, seed per call

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
