"""The connection test: is an endpoint usable before a run depends on it?

It lists the server's models (`GET /models`), then sends one small prompt to each chosen model (at most
MAX_MODELS) with the temperature and token limit a run sends, and reports per model the latency, tokens,
cost (None: no price, shown as unknown) and every parameter the server refused (learned and stored, so
runs drop it from their first call). Windows the listing states (vLLM's max_model_len, context_length
elsewhere) are stored per model.

It runs inside the web request, synchronously: a few small calls, each with CALL_TIMEOUT_S and no
retries, and no new call once TOTAL_LIMIT_S has passed, so the page answers within about a minute even
for a slow endpoint; the button shows that a test is under way meanwhile. The endpoint's address passes
the same SSRF check as a run's (apps/llm/ssrf.py) first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from django.utils import timezone

from apps.llm.models import LLMEndpoint
from apps.llm.services import client_for, record_server_window, record_test
from apps.llm.ssrf import UnsafeEndpoint, check_base_url
from worker.agents.llm import LLMError, RetryPolicy, known_models, match_model, window_from_listing

MAX_MODELS = 5
CALL_TIMEOUT_S = 20.0
TOTAL_LIMIT_S = 60.0
MAX_TOKENS = 256  # room for a reasoning model to think a little before "ready"
TEMPERATURE = 0.2  # what the launch form sends by default: a model that refuses it says so here
PROMPT = [
    {"role": "system", "content": "You are the connection test of KernelWeb, a CUDA kernel optimizer."},
    {"role": "user", "content": "Reply with the single word: ready"},
]


@dataclass(frozen=True)
class ModelResult:
    model: str
    ok: bool
    error: str = ""
    latency_s: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None  # None: no price for this model (unknown, not free)
    answer: str = ""
    notes: list[str] = field(default_factory=list)  # parameters refused and what was sent instead
    context_window: int | None = None
    window_source: str = ""  # "endpoint setting" | "server /models" | "shipped defaults" | ""
    listed: bool | None = None  # in the server's /models listing (None: no listing)


@dataclass(frozen=True)
class ConnectionReport:
    ok: bool
    base_url: str
    tested_at: str
    duration_s: float
    error: str = ""  # why nothing could be tested (address refused, no model to test)
    listing_error: str = ""
    listed: list[str] = field(default_factory=list)  # model ids from GET /models (first 200)
    models: list[ModelResult] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _window_source(endpoint: LLMEndpoint, model: str, listed_windows: dict[str, int]) -> tuple[int | None, str]:
    setting = endpoint.model_settings.filter(model=model).first()
    if setting and setting.context_window:
        return setting.context_window, "endpoint setting"
    if model in listed_windows:
        return listed_windows[model], "server /models"
    if setting and setting.server_context_window:
        return setting.server_context_window, "server /models, earlier"
    known = match_model(known_models(), model)
    if known is not None and known.context_window:
        return known.context_window, "shipped defaults"
    return None, ""


def run_connection_test(endpoint: LLMEndpoint, models: Sequence[str] | None = None, *,
                    clock: Callable[[], float] = time.monotonic) -> ConnectionReport:
    """Run the test, store its outcome on the endpoint (even a failed one) and return the report."""
    started = clock()
    tested_at = timezone.now().isoformat(timespec="seconds")

    def finish(ok: bool, **kwargs) -> ConnectionReport:
        report = ConnectionReport(ok=ok, base_url=endpoint.base_url, tested_at=tested_at,
                                  duration_s=round(clock() - started, 2), **kwargs)
        record_test(endpoint, report.to_dict(), ok)
        return report

    try:
        check_base_url(endpoint.base_url)
    except UnsafeEndpoint as exc:
        return finish(False, error=f"Refused: {exc}.")
    client = client_for(endpoint, (list(models or []) or endpoint.model_names or ["-"])[0],
                        timeout_s=CALL_TIMEOUT_S, retry=RetryPolicy(max_attempts=1), discover_windows=False)
    listed: list[str] = []
    listed_windows: dict[str, int] = {}
    listing_error = ""
    try:
        for entry in client.list_models():
            model_id = str(entry.get("id") or "")
            if not model_id:
                continue
            listed.append(model_id)
            if window := window_from_listing(entry):
                listed_windows[model_id] = window
    except LLMError as exc:
        listing_error = exc.message
    chosen = list(dict.fromkeys(models or endpoint.model_names or listed[:1]))
    if not chosen:
        return finish(False, error="No model to test: the endpoint lists none and none is set on this page.",
                      listing_error=listing_error, listed=listed[:200])
    results: list[ModelResult] = []
    for index, model in enumerate(chosen):
        in_listing = (model in listed) if listed else None
        if index >= MAX_MODELS:
            results.append(ModelResult(model, False, f"not tested: at most {MAX_MODELS} models per test",
                                       listed=in_listing))
            continue
        if clock() - started > TOTAL_LIMIT_S:
            results.append(ModelResult(model, False, f"not tested: the test's {TOTAL_LIMIT_S:.0f} s limit passed",
                                       listed=in_listing))
            continue
        if model in listed_windows:
            record_server_window(endpoint, model, listed_windows[model])
        window, source = _window_source(endpoint, model, listed_windows)
        try:
            answer = client.chat(PROMPT, model=model, temperature=TEMPERATURE, max_tokens=MAX_TOKENS)
        except LLMError as exc:
            results.append(ModelResult(model, False, exc.message, notes=list(exc.notes), context_window=window,
                                       window_source=source, listed=in_listing))
            continue
        results.append(ModelResult(
            model, True, latency_s=round(answer.latency_s, 3), tokens_in=answer.tokens_in,
            tokens_out=answer.tokens_out, reasoning_tokens=answer.reasoning_tokens,
            cost_usd=answer.cost_usd if answer.priced else None, answer=answer.text.strip()[:200],
            notes=list(answer.notes), context_window=window, window_source=source, listed=in_listing,
        ))
    ok = all(r.ok for r in results)
    return finish(ok, listing_error=listing_error, listed=listed[:200], models=results)
