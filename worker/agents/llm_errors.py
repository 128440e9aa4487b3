"""What an OpenAI-compatible endpoint's refusal says (worker/agents/llm.py acts on it): Retry-After, whether an
error is worth retrying and the message that says what to fix, and the two 400 answers the client adapts to (a
parameter the model refuses, a request longer than its context window)."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import openai


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
class Failure:
    message: str
    retriable: bool
    status: int | None = None
    retry_after: float | None = None


def error_detail(exc: openai.APIStatusError) -> str:
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


def classify_error(exc: openai.OpenAIError, model: str, timeout_s: float) -> Failure:
    # Order matters: APITimeoutError is an APIConnectionError, and status errors are APIErrors.
    if isinstance(exc, openai.APITimeoutError):
        return Failure(f"the request timed out after {timeout_s:g}s", True)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return Failure(f"could not reach the endpoint: {cause or exc.message}", True)
    if isinstance(exc, openai.APIStatusError):
        status, detail = exc.status_code, error_detail(exc)
        suffix = f": {detail}" if detail else ""
        if status == 429:
            after = retry_after_seconds(exc.response.headers)
            return Failure(f"rate limited by the endpoint (429){suffix}", True, status, after)
        if status >= 500:
            return Failure(f"the endpoint had a server error ({status}){suffix}", True, status)
        if status == 401:
            return Failure(f"the endpoint rejected the API key; update it in the admin (401){suffix}", False, status)
        if status == 403:
            return Failure(
                f"the API key may not use this endpoint or model '{model}' (403){suffix}", False, status
            )
        if status == 404:
            return Failure(
                f"not found (404): check the endpoint's base URL and the model id '{model}'{suffix}", False, status
            )
        if status == 400 or (status == 413 and "context" in detail.lower()):
            return Failure(f"the endpoint rejected the request as invalid ({status}){suffix}", False, status)
        return Failure(f"the endpoint refused the request ({status}){suffix}", False, status)
    return Failure(f"the OpenAI client failed: {exc}", False)


# Parameters a server may refuse for one model and that a request can do without (or rename).
ADAPTABLE_PARAMS = ("temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "presence_penalty",
                    "frequency_penalty")
_REFUSED_TEXT = re.compile(
    r"(?:unsupported (?:parameter|value):\s*'?(?P<a>\w+)'?)"
    r"|(?:'?(?P<b>\w+)'? (?:is not supported|is unsupported|does not support|is not allowed))",
    re.IGNORECASE,
)
_WINDOW_TEXT = (
    re.compile(r"maximum context length is (\d[\d,]*) tokens", re.I),  # OpenAI, vLLM, DeepSeek
    re.compile(r"model'?s context length \((\d[\d,]*) tokens\)", re.I),  # SGLang
    re.compile(r"context (?:size|window|length)(?: is| of)? \(?(\d[\d,]*)\)?", re.I),
)
_PROMPT_TEXT = (
    re.compile(r"your messages resulted in (\d[\d,]*) tokens", re.I),
    re.compile(r"\((\d[\d,]*) in the messages", re.I),
    re.compile(r"your request has (\d[\d,]*) input tokens", re.I),
    re.compile(r"the input \((\d[\d,]*) tokens\)", re.I),
)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _error_fields(exc: openai.APIStatusError) -> dict[str, Any]:
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            return dict(inner)
    return {}


def refused_parameter(exc: openai.APIStatusError, sent: Mapping[str, Any]) -> str | None:
    """The request parameter a 400 says the model does not accept, if it is one we can do without."""
    if exc.status_code != 400:
        return None
    fields = _error_fields(exc)
    detail = error_detail(exc)
    param = fields.get("param")
    code = str(fields.get("code") or "")
    if isinstance(param, str) and param in sent and param in ADAPTABLE_PARAMS and (
            code.startswith("unsupported") or "support" in detail.lower()):
        return param
    for match in _REFUSED_TEXT.finditer(detail):
        name = match.group("a") or match.group("b")
        if name in sent and name in ADAPTABLE_PARAMS:
            return name
    return None


def context_length_error(exc: openai.APIStatusError) -> tuple[int | None, int | None] | None:
    """(window, prompt tokens) when a 400/413 says the request does not fit the model's context, else None."""
    if exc.status_code not in (400, 413):
        return None
    fields = _error_fields(exc)
    detail = error_detail(exc)
    lowered = detail.lower()
    code = str(fields.get("code") or fields.get("type") or "")
    if not (code in ("context_length_exceeded", "exceed_context_size_error")
            or "maximum context length" in lowered or "context length" in lowered
            or "exceeds the available context size" in lowered or "context window" in lowered):
        return None
    window = fields.get("n_ctx") if isinstance(fields.get("n_ctx"), int) else None  # llama.cpp's fields
    prompt = fields.get("n_prompt_tokens") if isinstance(fields.get("n_prompt_tokens"), int) else None
    for pattern in _WINDOW_TEXT:
        if window is None and (found := pattern.search(detail)):
            window = _int(found.group(1))
    for pattern in _PROMPT_TEXT:
        if prompt is None and (found := pattern.search(detail)):
            prompt = _int(found.group(1))
    return window, prompt
