"""The LLM client through the real openai SDK against the scripted server (never the network).

Backoff waits go to a recording `sleep`, so no test waits for a retry; only the timeout tests wait,
for a fraction of a second, for the client's own timeout to fire.
"""

from __future__ import annotations

import json
import socket

import openai
import pytest

from testing.scripted_llm import ScriptedLLM, detect_agent
from worker.agents.llm import (
    ChatClient,
    LLMError,
    LLMResponse,
    ModelPrice,
    OpenAIChatClient,
    PriceTable,
    RetryPolicy,
    ScriptedChatClient,
    retry_after_seconds,
)

QUESTION = [{"role": "system", "content": "You answer briefly."}, {"role": "user", "content": "2 + 2?"}]


def make_client(
    server: ScriptedLLM, delays: list[float], model: str = "gpt-4o", **kwargs
) -> OpenAIChatClient:
    kwargs.setdefault("retry", RetryPolicy(max_attempts=3, base_delay_s=1.0, jitter=0.25))
    return OpenAIChatClient(
        server.base_url, "sk-test", model, sleep=delays.append, rand=lambda: 0.5, **kwargs
    )


def test_success_reports_text_usage_and_cost():
    steps = [{"content": "4", "usage": {"prompt_tokens": 1000, "completion_tokens": 500}}]
    delays: list[float] = []
    with ScriptedLLM(steps) as server:
        response = make_client(server, delays).chat(QUESTION, temperature=0.2, max_tokens=64)
    assert isinstance(response, LLMResponse)
    assert (response.text, response.model, response.finish_reason) == ("4", "gpt-4o", "stop")
    assert (response.tokens_in, response.tokens_out, response.attempts) == (1000, 500, 1)
    # gpt-4o: $2.50 / 1M in, $10 / 1M out
    assert response.cost_usd == pytest.approx(1000 * 2.5e-6 + 500 * 10e-6)
    assert response.priced and not response.estimated_tokens
    assert response.attempt_errors == () and delays == []
    request = server.requests[0]
    assert (request.model, request.temperature, request.max_tokens) == ("gpt-4o", 0.2, 64)
    assert request.messages == QUESTION
    assert request.headers["authorization"] == "Bearer sk-test"


def test_the_seed_is_sent_only_when_set():
    with ScriptedLLM([{"content": "a"}, {"content": "b"}]) as server:
        client = make_client(server, [])
        client.chat(QUESTION, seed=1234)
        client.chat(QUESTION)
    assert server.requests[0].body["seed"] == 1234
    assert "seed" not in server.requests[1].body


def test_rate_limit_is_retried_after_the_servers_retry_after():
    steps = [{"status": 429, "retry_after": "2"}, {"content": "4"}]
    delays: list[float] = []
    with ScriptedLLM(steps) as server:
        response = make_client(server, delays).chat(QUESTION)
    assert response.text == "4"
    assert response.attempts == 2
    assert delays == [2.0]
    assert len(response.attempt_errors) == 1 and "429" in response.attempt_errors[0]


def test_retry_after_is_capped_by_the_policy():
    steps = [{"status": 429, "retry_after": "3600"}, {"content": "ok"}]
    delays: list[float] = []
    policy = RetryPolicy(max_attempts=2, max_retry_after_s=30)
    with ScriptedLLM(steps) as server:
        make_client(server, delays, retry=policy).chat(QUESTION)
    assert delays == [30]


def test_rate_limit_without_retry_after_backs_off_exponentially():
    steps = [{"status": 429}, {"status": 429}, {"content": "ok"}]
    delays: list[float] = []
    with ScriptedLLM(steps) as server:
        response = make_client(server, delays).chat(QUESTION)
    assert response.attempts == 3
    assert delays == [1.0, 2.0]  # rand() = 0.5 puts the jitter factor at exactly 1


def test_server_error_503_is_retried_then_succeeds():
    steps = [{"status": 503, "body": {"error": {"message": "overloaded"}}}, {"content": "4"}]
    delays: list[float] = []
    with ScriptedLLM(steps) as server:
        response = make_client(server, delays).chat(QUESTION)
    assert (response.text, response.attempts) == ("4", 2)
    assert "server error (503): overloaded" in response.attempt_errors[0]
    assert len(server.requests) == 2


def test_persistent_server_errors_give_up_after_max_attempts_as_retriable():
    steps = [{"status": 502, "repeat": 5}]
    delays: list[float] = []
    with ScriptedLLM(steps) as server:
        with pytest.raises(LLMError) as caught:
            make_client(server, delays).chat(QUESTION)
    error = caught.value
    assert error.retriable and error.attempts == 3 and error.status == 502
    assert "gave up after 3 attempts" in error.message
    assert len(error.attempt_errors) == 3 and len(server.requests) == 3


def test_401_fails_at_once_and_says_to_update_the_key():
    steps = [
        {"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}},
        {"content": "never"},
    ]
    delays: list[float] = []
    with ScriptedLLM(steps) as server:
        with pytest.raises(LLMError) as caught:
            make_client(server, delays).chat(QUESTION)
        assert server.remaining == 1
    error = caught.value
    assert "the endpoint rejected the API key; update it in the admin" in error.message
    assert not error.retriable and error.attempts == 1 and error.status == 401
    assert delays == []


def test_400_fails_at_once_with_the_endpoints_explanation():
    steps = [{"status": 400, "body": {"error": {"message": "temperature must be <= 2"}}}]
    with ScriptedLLM(steps) as server:
        with pytest.raises(LLMError) as caught:
            make_client(server, []).chat(QUESTION, temperature=5)
    assert not caught.value.retriable and caught.value.attempts == 1
    assert "invalid (400): temperature must be <= 2" in caught.value.message


def test_404_points_at_the_base_url_and_model():
    with ScriptedLLM([{"status": 404}]) as server:
        with pytest.raises(LLMError) as caught:
            make_client(server, [], model="gpt-9").chat(QUESTION)
    assert "base URL" in caught.value.message and "'gpt-9'" in caught.value.message
    assert not caught.value.retriable


def test_timeouts_are_retried_then_raise_a_retriable_error():
    steps = [{"delay_s": 3, "repeat": 2}]
    policy = RetryPolicy(max_attempts=2, base_delay_s=0.0)
    with ScriptedLLM(steps) as server:
        with pytest.raises(LLMError) as caught:
            make_client(server, [], timeout_s=0.2, retry=policy).chat(QUESTION)
    error = caught.value
    assert error.retriable and error.attempts == 2
    assert "timed out after 0.2s" in error.message
    assert all("timed out" in e for e in error.attempt_errors)


def test_a_timeout_followed_by_an_answer_succeeds():
    steps = [{"delay_s": 3}, {"content": "4"}]
    with ScriptedLLM(steps) as server:
        response = make_client(server, [], timeout_s=0.2).chat(QUESTION)
    assert (response.text, response.attempts) == ("4", 2)
    assert "timed out" in response.attempt_errors[0]


def test_an_unreachable_endpoint_is_retried_as_a_connection_error():
    with socket.socket() as sock:  # a port nobody listens on once it is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    delays: list[float] = []
    client = OpenAIChatClient(
        f"http://127.0.0.1:{port}/v1", "k", "gpt-4o", retry=RetryPolicy(max_attempts=2), sleep=delays.append
    )
    with pytest.raises(LLMError) as caught:
        client.chat(QUESTION)
    assert caught.value.retriable and caught.value.attempts == 2 and len(delays) == 1
    assert "could not reach the endpoint" in caught.value.message


def test_an_unknown_model_costs_nothing_and_is_marked_unpriced():
    steps = [{"content": "4", "usage": {"prompt_tokens": 10_000, "completion_tokens": 10_000}}]
    with ScriptedLLM(steps) as server:
        response = make_client(server, [], model="my-local-llama").chat(QUESTION)
    assert response.cost_usd == 0 and response.priced is False
    assert (response.tokens_in, response.tokens_out) == (10_000, 10_000)


def test_missing_usage_is_estimated_and_marked_as_such():
    steps = [{"content": "x" * 400, "usage": None}]
    with ScriptedLLM(steps) as server:
        response = make_client(server, []).chat(QUESTION)
    assert response.estimated_tokens
    assert response.tokens_out == 134  # the budget's conservative 3 characters per token, rounded up
    assert response.tokens_in > 0 and response.cost_usd > 0


def test_finish_reason_length_is_passed_on():
    with ScriptedLLM([{"content": "```cuda\n__global__", "finish_reason": "length"}]) as server:
        response = make_client(server, []).chat(QUESTION)
    assert response.finish_reason == "length"


def test_the_answering_model_id_is_reported_but_the_asked_id_is_priced():
    steps = [
        {
            "content": "4",
            "model": "gpt-4o-mini-2024-07-18",
            "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0},
        }
    ]
    with ScriptedLLM(steps) as server:
        response = make_client(server, [], model="gpt-4o-mini").chat(QUESTION)
    assert response.model == "gpt-4o-mini-2024-07-18"
    assert response.cost_usd == pytest.approx(0.15)


def test_reasoning_models_can_get_max_completion_tokens():
    with ScriptedLLM([{"content": "4"}]) as server:
        make_client(server, [], model="o4-mini", token_limit_field="max_completion_tokens").chat(
            QUESTION, max_tokens=100
        )
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body


def test_price_overrides_from_a_json_file(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"my-local-llama": {"input": 1.0, "output": 3.0}, "gpt-4o": [5, 15]}))
    prices = PriceTable.load(path)
    assert prices.cost("my-local-llama", 1_000_000, 1_000_000) == (4.0, True)
    assert prices.price("gpt-4o") == ModelPrice(5.0, 15.0)
    assert prices.price("gpt-4o-mini") == ModelPrice(0.15, 0.60, 0.075)  # defaults (models.json) stay
    steps = [{"content": "4", "usage": {"prompt_tokens": 2_000_000, "completion_tokens": 0}}]
    with ScriptedLLM(steps) as server:
        response = make_client(server, [], model="my-local-llama", prices=prices).chat(QUESTION)
    assert response.priced and response.cost_usd == pytest.approx(2.0)


def test_price_overrides_from_a_dict_and_bad_entries_are_named(tmp_path):
    assert PriceTable.load({"x": {"input": 0, "output": 1}}).cost("x", 0, 2_000_000) == (2.0, True)
    with pytest.raises(ValueError, match="'x'"):
        PriceTable.load({"x": {"input": -1, "output": 1}})
    with pytest.raises(ValueError, match="not valid JSON"):
        bad = tmp_path / "bad.json"
        bad.write_text("{")
        PriceTable.load(bad)
    with pytest.raises(ValueError, match="does not exist"):
        PriceTable.load(tmp_path / "missing.json")


def test_snapshot_and_provider_prefixed_ids_are_priced_like_their_family():
    prices = PriceTable()
    assert prices.price("gpt-4o-2024-08-06") == prices.price("gpt-4o")
    assert prices.price("openai/gpt-4o-mini") == prices.price("gpt-4o-mini")
    assert prices.price("gpt-4o-mini-2024-07-18") == prices.price("gpt-4o-mini")  # longest family wins
    assert prices.price("gpt-4") is None


def test_backoff_doubles_jitters_and_is_capped():
    policy = RetryPolicy(base_delay_s=1, max_delay_s=5, jitter=0.25)
    assert [policy.delay(k, None, lambda: 0.5) for k in (1, 2, 3, 4)] == [1, 2, 4, 5]
    assert policy.delay(1, None, lambda: 0.0) == 0.75 and policy.delay(1, None, lambda: 1.0) == 1.25
    assert policy.delay(1, 7.0) == 7.0


def test_retry_after_reads_seconds_milliseconds_and_http_dates():
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    now = 1_700_000_000
    assert retry_after_seconds({"retry-after": "Tue, 14 Nov 2023 22:13:30 GMT"}, now=now) == pytest.approx(10)
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_a_client_needs_a_base_url_and_a_model():
    with pytest.raises(ValueError, match="base URL"):
        OpenAIChatClient("", "k", "m")
    with pytest.raises(ValueError, match="model"):
        OpenAIChatClient("http://127.0.0.1:1/v1", "k", "")


def test_the_scripted_chat_client_fits_the_protocol_and_plays_its_answers():
    client: ChatClient = ScriptedChatClient(["first", LLMError("down", retriable=True, attempts=3)])
    assert client.chat(QUESTION).text == "first"
    with pytest.raises(LLMError, match="down"):
        client.chat(QUESTION)
    with pytest.raises(LLMError, match="no answers left"):
        client.chat(QUESTION)


# -- the scripted server itself


def test_server_lists_its_models_and_serves_steps_by_agent():
    script = {
        "models": ["demo-model"],
        "steps": [
            {"agent": "coder", "content": "code"},
            {"agent": "planner", "content": "plan"},
        ],
    }
    with ScriptedLLM(script) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        assert [m.id for m in sdk.models.list()] == ["demo-model"]
        client = make_client(server, [], model="demo-model")
        go = {"role": "user", "content": "go"}
        planner = [{"role": "system", "content": "# Planner agent\n..."}, go]
        coder = [{"role": "system", "content": "# Coder agent\nA Planner agent wrote..."}, go]
        assert client.chat(planner).text == "plan"
        assert client.chat(coder).text == "code"
    assert [r.agent for r in server.requests] == ["planner", "coder"]
    assert [r.step for r in server.requests] == [1, 0]
    assert len(server.requests_for("coder")) == 1


def test_server_refuses_a_request_no_step_matches_without_retries():
    with ScriptedLLM([{"agent": "debug", "content": "fix"}]) as server:
        with pytest.raises(LLMError) as caught:
            make_client(server, []).chat(QUESTION)
    assert "no step left that matches" in caught.value.message and not caught.value.retriable
    assert server.requests[0].step is None


def test_server_matches_on_prompt_text_and_model():
    steps = [
        {"match": {"user_contains": "bf16"}, "content": "bf16 answer"},
        {"match": {"model": "m2"}, "content": "m2 answer"},
    ]
    with ScriptedLLM(steps) as server:
        client = make_client(server, [], model="m1")
        assert client.chat(QUESTION, model="m2").text == "m2 answer"
        assert client.chat([{"role": "user", "content": "the bf16 task"}]).text == "bf16 answer"


def test_server_loads_a_script_file_and_rejects_unknown_keys(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"content_lines": ["a", "b"]}]))
    with ScriptedLLM(path) as server:
        assert make_client(server, []).chat(QUESTION).text == "a\nb"
    with pytest.raises(ValueError, match="unknown key"):
        ScriptedLLM([{"contents": "typo"}])


def test_agent_detection_reads_the_heading_first():
    assert detect_agent("# Debug agent\nA Coder agent will apply your fix.") == "debug"
    assert detect_agent("You are the compiler agent.") == "compiler"
    assert detect_agent("You are helpful.") is None


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("<html><body>502 Bad Gateway (but sent as 200)</body></html>", "without any choices"),
        ({"unexpected": "shape"}, "without any choices"),
        ({"choices": [{"index": 0, "message": {"role": "assistant", "content": {"not": "text"}}}]}, "not text"),
    ],
    ids=["html", "json-without-choices", "content-not-text"],
)
def test_a_garbage_answer_fails_the_call_at_once_with_a_readable_reason(body, says):
    delays: list[float] = []
    with ScriptedLLM([{"body": body}]) as server:
        client = make_client(server, delays)
        with pytest.raises(LLMError) as caught:
            client.chat(QUESTION)
    assert says in str(caught.value) and not caught.value.retriable and caught.value.attempts == 1
    assert delays == []  # garbage is not retried: the same endpoint would send it again


# ------------------------------------------------------------------ reasoning models, windows, prices


def test_a_refused_temperature_is_dropped_retried_at_once_and_remembered():
    learned = []
    with ScriptedLLM([{"content": "4", "repeat": 2}], quirks={"refuse_params": ["temperature"]}) as server:
        client = make_client(server, delays := [], model="o-custom", on_learned=lambda *a: learned.append(a))
        first = client.chat(QUESTION, temperature=0.2)
        second = client.chat(QUESTION, temperature=0.2)
    assert delays == []  # a changed request is not a retry: no backoff
    assert first.notes == ("o-custom refused temperature=0.2; sent without it",)
    assert second.notes == ("temperature=0.2 not sent: o-custom refuses it on this endpoint",)
    assert [("temperature" in r.body) for r in server.requests] == [True, False, False]
    assert learned[0][0] == "o-custom" and learned[0][1].refused == {"temperature"}


def test_the_real_max_tokens_refusal_switches_to_max_completion_tokens():
    with ScriptedLLM([{"content": "4"}], quirks={"refuse_params": ["max_tokens"]}) as server:
        response = make_client(server, [], model="o-custom").chat(QUESTION, max_tokens=77)
    assert server.requests[-1].body["max_completion_tokens"] == 77 and "max_tokens" not in server.requests[-1].body
    assert "sent max_completion_tokens=77 instead" in response.notes[0]


def test_known_reasoning_models_never_get_temperature_in_the_first_place():
    with ScriptedLLM([{"content": "4"}]) as server:
        make_client(server, [], model="o4-mini-2025-04-16").chat(QUESTION, temperature=0.2, max_tokens=10)
    body = server.requests[0].body
    assert "temperature" not in body and body["max_completion_tokens"] == 10


@pytest.mark.parametrize("style, window, prompt", [("openai", 100, 254), ("vllm", 100, 254), ("llamacpp", 100, 254)])
def test_context_length_errors_are_recognised_in_each_servers_words(style, window, prompt):
    from worker.agents.llm import ContextLengthError

    with ScriptedLLM([{"content": "4"}], quirks={"context_window": window, "context_error": style}) as server:
        with pytest.raises(ContextLengthError) as caught:
            make_client(server, []).chat([{"role": "user", "content": "x" * 1000}], max_tokens=10)
    assert (caught.value.window, caught.value.prompt_tokens) == (window, prompt)
    assert caught.value.attempts == 1 and "context window" in caught.value.message


def test_sglang_context_text_is_recognised_too():
    from worker.agents.llm import ContextLengthError

    body = {"object": "error", "message": "The input (40000 tokens) is longer than the model's context length "
                                          "(32768 tokens).", "type": "BadRequestError", "code": 400}
    with ScriptedLLM([{"status": 400, "body": body}]) as server:
        with pytest.raises(ContextLengthError) as caught:
            make_client(server, []).chat(QUESTION)
    assert (caught.value.window, caught.value.prompt_tokens) == (32768, 40000)


def test_reasoning_comes_from_a_field_or_a_think_block_and_reasoning_tokens_are_priced():
    prices = PriceTable({"r": ModelPrice(0.0, 1.0, reasoning_per_m=3.0)})
    steps = [{"content": "4", "reasoning": "two and two", "usage": {
        "prompt_tokens": 10, "completion_tokens": 1_000_000,
        "completion_tokens_details": {"reasoning_tokens": 500_000}}}]
    with ScriptedLLM(steps, quirks={"reasoning": "reasoning_content"}) as server:
        response = make_client(server, [], model="r", prices=prices).chat(QUESTION)
    assert (response.text, response.reasoning, response.reasoning_tokens) == ("4", "two and two", 500_000)
    assert response.cost_usd == pytest.approx(0.5 * 1.0 + 0.5 * 3.0)
    with ScriptedLLM([{"content": "4", "reasoning": "hmm"}], quirks={"reasoning": "think"}) as server:
        response = make_client(server, []).chat(QUESTION)
    assert (response.text, response.reasoning) == ("4", "hmm")


def test_cached_input_is_priced_at_the_cached_price():
    steps = [{"content": "4", "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0,
                                        "prompt_tokens_details": {"cached_tokens": 400_000}}}]
    with ScriptedLLM(steps) as server:
        response = make_client(server, [], model="gpt-4o").chat(QUESTION)
    assert response.cached_tokens == 400_000
    assert response.cost_usd == pytest.approx(0.6 * 2.50 + 0.4 * 1.25)


@pytest.mark.parametrize("key", ["max_model_len", "context_length"])
def test_the_window_comes_from_the_model_listing_when_the_server_states_it(key):
    quirks = {"context_window": 32768, "models_window_key": key}
    with ScriptedLLM([], quirks=quirks, models=["served"]) as server:
        assert make_client(server, [], model="served").context_window("served") == 32768


def test_without_a_listed_window_the_setting_then_the_shipped_default_then_nothing():
    with ScriptedLLM([], models=["gpt-4o-2024-08-06", "mystery"]) as server:
        client = make_client(server, [], context_windows={"mystery": 4096})
        assert client.context_window("mystery") == 4096
        assert client.context_window("gpt-4o-2024-08-06") == 128000  # models.json, by its family
        assert client.context_window("unknown-model") is None
