"""An OpenAI-compatible HTTP server that answers from a script, for tests and demos (never the network).

A script is a JSON list of steps (or `{"models": [...], "steps": [...]}`). Each request to
`POST /v1/chat/completions` is served by the first unused step that matches it; a step without
matchers matches anything, so a plain list plays in order. Step keys, all optional:

    agent          "planner" | "coder" | "compiler" | "debug": the system prompt names "<agent> agent"
    match          {"system_contains": s, "user_contains": s, "model": s}
    content        the assistant's text; or content_lines: a list of lines joined with newlines
    usage          {"prompt_tokens": n, "completion_tokens": n}; null sends no usage at all;
                   absent: rough counts from the text (4 characters per token)
    finish_reason  default "stop"
    model          the model id to answer with (default: the one asked for)
    status, body   answer with this HTTP status and body (a JSON object or a string) instead of a
                   completion; a body with status 200 (or none) is a garbage answer
    retry_after    adds a Retry-After header (seconds); headers: any other response headers
    delay_s        wait this long before answering (to trigger client timeouts)
    repeat         serve this many requests with the step (default 1)
    reasoning      the reasoning text sent with the answer (where the quirks send reasoning)

Quirks (`quirks=` a dict or the name of a profile in PROFILES, or a script's "quirks" key) make the
server behave like a given family of servers, before any step is taken (a refused request consumes no
step, as on a real server):

    refuse_params     request parameters answered with 400 in OpenAI's error shape (reasoning models refuse
                      "temperature", "top_p" and "max_tokens" - the last with advice to send
                      max_completion_tokens)
    reasoning         "reasoning_content" (DeepSeek, vLLM) or "reasoning" (newer vLLM, Ollama): the message
                      carries the step's reasoning text in that field; "think": inside <think></think> in content
    reasoning_tokens  report usage.completion_tokens_details.reasoning_tokens (OpenAI reasoning models)
    context_window    the model's window in tokens (the server counts four characters per token)
    context_error     how a request over the window is refused: "openai" (prompt over the window,
                      code context_length_exceeded), "vllm" (prompt + max_tokens over it, vLLM's text and
                      shape), "llamacpp" (exceed_context_size_error with n_ctx)
    usage             False: never send usage
    models_window_key where GET /models states the window: "max_model_len" (vLLM), "context_length"
                      (OpenRouter, LM Studio and others) or absent (OpenAI, which does not say)

Every request is recorded (`server.requests`) for assertions. A request no step matches gets
HTTP 409 with an explanation, and is recorded with `step=None`.

    with ScriptedLLM([{"content": "hello"}]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")

    python -m testing.scripted_llm --script demo/scripts/vector_add_demo.json --port 8765
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

AGENTS = ("planner", "coder", "compiler", "debug")
_STEP_KEYS = {
    "agent", "match", "content", "content_lines", "usage", "finish_reason", "model", "status", "body",
    "retry_after", "headers", "delay_s", "repeat", "note", "reasoning",
}
_QUIRK_KEYS = {"refuse_params", "reasoning", "reasoning_tokens", "context_window", "context_error", "usage",
               "models_window_key"}
DEFAULT_REASONING = "The kernel reads each element once; the plan should keep loads coalesced."

# Profiles of real server families, as far as the double imitates them (docs/agents.md has the table).
PROFILES: dict[str, dict[str, Any]] = {
    "openai": {},
    "openai-reasoning": {"refuse_params": ["temperature", "top_p", "max_tokens"], "reasoning_tokens": True,
                         "context_window": 200000, "context_error": "openai"},
    "deepseek-reasoner": {"reasoning": "reasoning_content", "reasoning_tokens": True, "context_window": 128000,
                          "context_error": "openai"},
    "vllm": {"models_window_key": "max_model_len", "context_window": 32768, "context_error": "vllm"},
    "vllm-reasoning": {"models_window_key": "max_model_len", "context_window": 32768, "context_error": "vllm",
                       "reasoning": "reasoning"},
    "ollama": {"reasoning": "think", "models_window_key": None},
    "llamacpp": {"context_window": 8192, "context_error": "llamacpp", "models_window_key": None},
    "openrouter": {"models_window_key": "context_length", "context_window": 65536, "context_error": "openai"},
    "no-usage": {"usage": False},
}


def server_tokens(text: str) -> int:
    """The double's own token count: four characters per token (the client estimates more)."""
    return -(-len(text) // 4)


def load_quirks(quirks: str | dict[str, Any] | None) -> dict[str, Any]:
    if quirks is None:
        return {}
    if isinstance(quirks, str):
        if quirks not in PROFILES:
            raise ValueError(f"no quirk profile {quirks!r}; profiles: {', '.join(PROFILES)}")
        return dict(PROFILES[quirks])
    unknown = set(quirks) - _QUIRK_KEYS
    if unknown:
        raise ValueError(f"unknown quirk(s) {', '.join(sorted(unknown))}")
    return dict(quirks)


def _openai_error(message: str, *, param: str | None, code: str, type: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    model: str | None
    messages: list[dict[str, Any]]
    temperature: float | None
    max_tokens: int | None
    agent: str | None  # detected from the system prompt
    step: int | None  # index of the step that answered, None when none matched
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def system(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") == "system")

    @property
    def user(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") == "user")


@dataclass
class _Step:
    index: int
    spec: dict[str, Any]
    left: int

    def matches(self, agent: str | None, system: str, user: str, model: str | None) -> bool:
        wanted = self.spec.get("agent")
        if wanted and wanted != agent:
            return False
        rules = self.spec.get("match") or {}
        if "system_contains" in rules and rules["system_contains"] not in system:
            return False
        if "user_contains" in rules and rules["user_contains"] not in user:
            return False
        return not ("model" in rules and rules["model"] != model)


def detect_agent(system_prompt: str) -> str | None:
    """Which of the four agents a system prompt belongs to: its "<name> agent" heading."""
    # The heading first: a prompt may mention other agents further down.
    heading = re.search(r"^#+\s*(planner|coder|compiler|debug)\s+agent\b", system_prompt, re.IGNORECASE | re.M)
    match = heading or re.search(r"\b(planner|coder|compiler|debug)\s+agent\b", system_prompt, re.IGNORECASE)
    return match.group(1).lower() if match else None


def load_script(source: str | Path | list | dict) -> tuple[list[dict[str, Any]], list[str]]:
    """(steps, model ids) from a path to a JSON file, a list of steps or a {"steps", "models"} dict."""
    steps, models, _ = _load(source)
    return steps, models


def _load(source: str | Path | list | dict) -> tuple[list[dict[str, Any]], list[str], Any]:
    data: Any = source
    if isinstance(source, (str, Path)):
        data = json.loads(Path(source).read_text(encoding="utf-8"))
    models = ["scripted-model"]
    quirks = None
    if isinstance(data, dict):
        models = list(data.get("models") or models)
        quirks = data.get("quirks")
        data = data.get("steps")
    if not isinstance(data, list):
        raise ValueError("a script is a list of steps, or an object with a 'steps' list")
    for i, step in enumerate(data):
        if not isinstance(step, dict):
            raise ValueError(f"step {i} must be an object")
        unknown = set(step) - _STEP_KEYS
        if unknown:
            raise ValueError(f"step {i}: unknown key(s) {', '.join(sorted(unknown))}")
        if step.get("agent") and step["agent"] not in AGENTS:
            raise ValueError(f"step {i}: agent must be one of {', '.join(AGENTS)}")
    return data, models, quirks


class ScriptedLLM:
    """The server; a context manager that runs it on 127.0.0.1 in a background thread."""

    def __init__(
        self,
        script: str | Path | list | dict,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        loop: bool = False,
        log: bool = False,
        quirks: str | dict[str, Any] | None = None,
        models: list[str] | None = None,
    ):
        steps, self.models, script_quirks = _load(script)
        if models is not None:
            self.models = list(models)
        self.quirks = load_quirks(quirks if quirks is not None else script_quirks)
        self.refused: list[str] = []  # why each request the quirks refused was refused
        self._specs = steps
        self._loop = loop  # start the script over when it runs out (demos)
        self._log = log
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._steps = self._fresh_steps()
        self.requests: list[RecordedRequest] = []
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self._httpd.server_address[0]}:{self.port}/v1"

    def start(self) -> ScriptedLLM:
        # A short poll interval makes stop() quick: shutdown() waits for the loop's next poll.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes handlers that sit in a delay
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- state

    def _fresh_steps(self) -> list[_Step]:
        return [_Step(i, spec, int(spec.get("repeat", 1))) for i, spec in enumerate(self._specs)]

    @property
    def remaining(self) -> int:
        """Requests the script can still serve."""
        with self._lock:
            return sum(s.left for s in self._steps)

    def requests_for(self, agent: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.agent == agent]

    def _take(self, agent: str | None, system: str, user: str, model: str | None) -> _Step | None:
        with self._lock:
            if self._loop and not any(s.left for s in self._steps):
                self._steps = self._fresh_steps()
            for step in self._steps:
                if step.left > 0 and step.matches(agent, system, user, model):
                    step.left -= 1
                    return step
        return None

    def _refusal(self, body: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The 400 body the quirks answer this request with, or None: refused parameters first (as OpenAI
        checks them), then the context window."""
        quirks = self.quirks
        for param in quirks.get("refuse_params") or ():
            if param not in body:
                continue
            if param == "max_tokens":
                return _openai_error(
                    "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                    "'max_completion_tokens' instead.", param=param, code="unsupported_parameter")
            if param in ("temperature", "top_p") and body[param] != 1:
                return _openai_error(
                    f"Unsupported value: '{param}' does not support {body[param]} with this model. Only the "
                    "default (1) value is supported.", param=param, code="unsupported_value")
            if param not in ("temperature", "top_p"):
                return _openai_error(f"Unsupported parameter: '{param}' is not supported with this model.",
                                     param=param, code="unsupported_parameter")
        window = quirks.get("context_window")
        style = quirks.get("context_error")
        if not window or not style:
            return None
        prompt = sum(server_tokens(str(m.get("content") or "")) + 4 for m in messages)
        completion = body.get("max_tokens", body.get("max_completion_tokens"))
        if style == "vllm":
            completion = completion if isinstance(completion, int) else 0
            if prompt + completion > window:
                return {"object": "error", "type": "BadRequestError", "param": None, "code": 400, "message": (
                    f"This model's maximum context length is {window} tokens. However, you requested "
                    f"{prompt + completion} tokens ({prompt} in the messages, {completion} in the completion). "
                    "Please reduce the length of the messages or completion.")}
            return None
        if prompt <= window:
            return None
        if style == "llamacpp":
            return {"error": {"code": 400, "message": "the request exceeds the available context size, try "
                              "increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": prompt,
                              "n_ctx": window}}
        return _openai_error(
            f"This model's maximum context length is {window} tokens. However, your messages resulted in "
            f"{prompt} tokens. Please reduce the length of the messages.", param="messages",
            code="context_length_exceeded")

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
        if self._log:
            where = "no matching step" if request.step is None else f"step {request.step}"
            print(f"{request.method} {request.path} agent={request.agent or '-'} -> {where}", flush=True)

    # -- HTTP

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "ScriptedLLM/1.0"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's signature
                pass  # quiet in tests; the CLI prints its own line per request

            def do_GET(self) -> None:
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    data = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in server.models]
                    key, window = server.quirks.get("models_window_key"), server.quirks.get("context_window")
                    if key and window:
                        for entry in data:
                            entry[key] = window
                    self._send(200, {"object": "list", "data": data})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "the body is not JSON", "type": "invalid_request"}})
                    return
                messages = body.get("messages") or []
                system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
                user = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
                agent = detect_agent(system)
                model = body.get("model")
                refusal = server._refusal(body, messages)
                step = None if refusal else server._take(agent, system, user, model)
                server._record(
                    RecordedRequest(
                        method="POST", path=self.path, model=model, messages=messages,
                        temperature=body.get("temperature"),
                        max_tokens=body.get("max_tokens", body.get("max_completion_tokens")),
                        agent=agent, step=None if step is None else step.index,
                        headers={k.lower(): v for k, v in self.headers.items()}, body=body,
                    )
                )
                if refusal is not None:
                    server.refused.append(str(refusal.get("error", refusal).get("message")))
                    self._send(400, refusal)
                    return
                if step is None:
                    message = f"scripted_llm: no step left that matches this request (agent={agent or 'unknown'})"
                    self._send(409, {"error": {"message": message, "type": "script_exhausted"}})
                    return
                if body.get("stream"):
                    self._send(400, {"error": {"message": "scripted_llm does not stream", "type": "invalid_request"}})
                    return
                self._answer(step.spec, model, messages)

            def _answer(self, spec: dict[str, Any], model: str | None, messages: list[dict[str, Any]]) -> None:
                delay = float(spec.get("delay_s", 0))
                if delay and server._stop.wait(delay):
                    return  # shutting down
                headers = dict(spec.get("headers") or {})
                if "retry_after" in spec:
                    headers["Retry-After"] = str(spec["retry_after"])
                if ("status" in spec and int(spec["status"]) != 200) or "body" in spec:
                    status = int(spec.get("status", 200))
                    body = spec.get("body")
                    if body is None:
                        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "error"
                        body = {"error": {"message": f"scripted {status} {phrase}", "type": "scripted"}}
                    self._send(status, body, headers)
                    return
                content = "\n".join(spec["content_lines"]) if "content_lines" in spec else str(spec.get("content", ""))
                prompt = "\n".join(str(m.get("content", "")) for m in messages)
                quirks = server.quirks
                message: dict[str, Any] = {"role": "assistant", "content": content}
                reasoning = str(spec.get("reasoning", DEFAULT_REASONING))
                style = quirks.get("reasoning")
                if style == "think":
                    message["content"] = f"<think>\n{reasoning}\n</think>\n\n{content}"
                elif style:
                    message[style] = reasoning
                answer: dict[str, Any] = {
                    "id": f"chatcmpl-scripted-{len(server.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": spec.get("model") or model or "scripted-model",
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": spec.get("finish_reason", "stop"),
                        }
                    ],
                }
                if "usage" not in spec:
                    usage = {"prompt_tokens": max(1, len(prompt) // 4), "completion_tokens": max(1, len(content) // 4)}
                    if quirks.get("reasoning_tokens"):
                        thought = server_tokens(reasoning)
                        usage["completion_tokens"] += thought  # reasoning tokens are part of the completion
                        usage["completion_tokens_details"] = {"reasoning_tokens": thought}
                else:
                    usage = spec["usage"]
                if quirks.get("usage") is False:
                    usage = None
                if usage is not None:
                    usage = dict(usage)
                    usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
                    answer["usage"] = usage
                self._send(200, answer, headers)

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = (json.dumps(body) if not isinstance(body, str) else body).encode()
                try:
                    self.send_response(status)
                    content_type = "text/plain" if isinstance(body, str) else "application/json"
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (e.g. its timeout fired during a delay step)

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a scripted OpenAI-compatible chat endpoint.")
    parser.add_argument("--script", required=True, help="JSON file: a list of steps (see the module docstring)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--loop", action="store_true", help="start the script over when it runs out")
    args = parser.parse_args(argv)
    try:
        server = ScriptedLLM(args.script, host=args.host, port=args.port, loop=args.loop, log=True)
    except OSError as exc:
        where = f"{args.host}:{args.port}"
        print(f"cannot listen on {where}: {exc.strerror}; pick another --port (0: any free one)", file=sys.stderr)
        return 2
    server.start()
    print(f"scripted LLM at {server.base_url} (models: {', '.join(server.models)}); Ctrl-C stops it", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
