"""The pipeline, through the real openai SDK, against each quirk profile of the scripted server, to the end
state docs/agents.md documents for it (the provider-family table). The engine is the scripted evaluator
(no GPU here); the LLM side is real HTTP.
"""

from __future__ import annotations

import pytest

from testing.scripted_llm import ScriptedLLM
from tests.support.scripted_eval import COMMAND, PLAN, ScriptedEvaluator, kernel
from tests.support.specs import write_task
from worker.agents.llm import ModelPrice, OpenAIChatClient, PriceTable, RetryPolicy
from worker.agents.pipeline import Pipeline, PipelineConfig
from worker.formats.cuda.spec import load_spec

ONE_ROUND = [
    {"agent": "planner", "content": PLAN},
    {"agent": "coder", "content": kernel("ok 1.8")},
    {"agent": "compiler", "content": COMMAND},
]
WINDOW = 6000  # fits the padded task only from the last trimming step on (see `padded`)


class Sink:
    def __init__(self):
        self.events, self.turns, self.calls = [], {}, []

    def event(self, type, payload):
        self.events.append((type, payload))

    def turn(self, record):
        self.turns[record.key] = record

    def agent_call(self, turn, record):
        self.calls.append(record)

    def cancelled(self):
        return False


@pytest.fixture
def spec(tmp_path):
    return load_spec(write_task(tmp_path, "vadd") / "spec.toml")


@pytest.fixture
def padded(spec):
    """The task with a 40,000-character baseline: about 13,000 tokens by our estimate, 9,900 by the server's."""
    source = spec.baseline_source("fp32")
    source.write_text(source.read_text() + "\n// " + "padding " * 5000 + "\n")
    return spec


def run(spec, server, model, *, learned=None, prices=None, **config):
    client = OpenAIChatClient(server.base_url, "sk-test", model, retry=RetryPolicy(max_attempts=1), prices=prices,
                              on_learned=(lambda *a: learned.append(a)) if learned is not None else None)
    evaluator = ScriptedEvaluator(spec)
    sink = Sink()
    result = Pipeline(spec, "fp32", PipelineConfig(model=model, rounds=1, debug_rounds=0, **config), client, sink,
                      evaluate_fn=evaluator, evaluate_baseline_fn=evaluator.baseline).run()
    return result, sink


def test_openai_reasoning_profile_drops_temperature_and_renames_max_tokens_then_remembers(spec):
    learned = []
    with ScriptedLLM(ONE_ROUND, quirks="openai-reasoning", models=["reasoner-x"]) as server:
        result, sink = run(spec, server, "reasoner-x", learned=learned)
    assert (result.status, result.best_turn, result.best_score) == ("succeeded", (1, 0), 1.8)
    assert len(server.refused) == 2  # one 400 per parameter, both on the first call
    planner = sink.calls[0]
    assert any("refused temperature=0.2; sent without it" in n for n in planner.notes)
    assert any("sent max_completion_tokens" in n for n in planner.notes)
    later = [r.body for r in server.requests if r.step is not None][1:]
    assert later and all("temperature" not in b and "max_completion_tokens" in b for b in later)
    assert all(any("not sent" in n for n in c.notes) for c in sink.calls[1:])  # each turn says what it left out
    assert learned[-1][1].refused == frozenset({"temperature"})
    assert learned[-1][1].token_limit_field == "max_completion_tokens"
    assert all(c.reasoning_tokens and c.reasoning_tokens > 0 for c in sink.calls)


def test_deepseek_reasoner_profile_stores_the_reasoning_and_prices_its_tokens(spec):
    prices = PriceTable({"r1": ModelPrice(1.0, 2.0, cached_input_per_m=0.1, reasoning_per_m=10.0)})
    steps = [dict(step, reasoning=f"thinking as the {step['agent']}") for step in ONE_ROUND]
    with ScriptedLLM(steps, quirks="deepseek-reasoner", models=["r1"]) as server:
        result, sink = run(spec, server, "r1", prices=prices)
    assert result.status == "succeeded"
    planner = sink.calls[0]
    assert planner.reasoning == "thinking as the planner" and planner.response == PLAN
    assert planner.reasoning_tokens > 0 and planner.priced
    expected = (planner.tokens_in * 1.0 + (planner.tokens_out - planner.reasoning_tokens) * 2.0
                + planner.reasoning_tokens * 10.0) / 1e6
    assert planner.cost_usd == pytest.approx(expected)
    assert result.cost_usd == pytest.approx(sum(c.cost_usd for c in sink.calls))


def test_think_blocks_are_moved_out_of_the_answer(spec):
    steps = [dict(step, reasoning="first the loads") for step in ONE_ROUND]
    with ScriptedLLM(steps, quirks="ollama") as server:
        result, sink = run(spec, server, "qwen3:32b")
    assert result.status == "succeeded" and sink.turns[(1, 0)].scheme == PLAN  # no <think> in the plan
    assert sink.calls[0].reasoning == "first the loads" and "<think>" not in sink.calls[0].response


@pytest.mark.parametrize("style", ["openai", "vllm", "llamacpp"])
def test_a_context_length_error_trims_the_prompt_and_retries_once(padded, style):
    quirks = {"context_window": WINDOW, "context_error": style}
    with ScriptedLLM(ONE_ROUND, quirks=quirks, models=["local-model"]) as server:
        result, sink = run(padded, server, "local-model")
    assert (result.status, result.best_score) == ("succeeded", 1.8)
    assert len(server.refused) == 1  # the first call only: later calls fit the window the error stated
    planner = sink.calls[0]
    assert any("too long for its 6,000-token window; trimmed and sent once more" in n for n in planner.notes)
    assert any("prompt trimmed to fit the 6,000-token window" in n for n in planner.notes)
    assert planner.context_window == WINDOW and planner.tokens_in < WINDOW
    assert "characters left out" in planner.messages[1]["content"]  # the code's head and tail were kept
    coder = sink.calls[1]
    assert coder.context_window == WINDOW and not any("refused the prompt" in n for n in coder.notes)


def test_a_window_from_the_model_listing_trims_before_sending(padded):
    quirks = {"context_window": WINDOW, "context_error": "vllm", "models_window_key": "max_model_len"}
    with ScriptedLLM(ONE_ROUND, quirks=quirks, models=["local-model"]) as server:
        result, sink = run(padded, server, "local-model")
    assert result.status == "succeeded" and server.refused == []  # never sent over the window
    first = next(r for r in server.requests if r.agent == "planner")
    assert first.max_tokens < 8192  # the answer's limit lowered to what the window leaves
    assert sink.calls[0].context_window == WINDOW and "trimmed" in sink.calls[0].notes[0]


def test_a_window_too_small_for_any_trimmed_prompt_fails_the_run_with_advice(padded):
    quirks = {"context_window": 900, "context_error": "openai", "models_window_key": "context_length"}
    with ScriptedLLM(ONE_ROUND, quirks=quirks, models=["tiny"]) as server:
        result, sink = run(padded, server, "tiny")
    assert result.status == "failed" and "even trimmed" in result.reason and "larger window" in result.reason
    assert [r for r in server.requests if r.method == "POST"] == []  # nothing sent that could not fit
    assert sink.calls[0].error and sink.calls[0].context_window == 900


def test_a_second_context_length_error_fails_the_turn(padded):
    # The server counts far more tokens than it admits to: trimming to the stated window is not enough.
    steps = [{"agent": "planner", "status": 400, "repeat": 2, "body": {"error": {
        "message": "This model's maximum context length is 6000 tokens. However, your messages resulted in "
                   "9000 tokens. Please reduce the length of the messages.", "type": "invalid_request_error",
        "param": "messages", "code": "context_length_exceeded"}}}]
    with ScriptedLLM(steps, models=["m"]) as server:
        result, sink = run(padded, server, "m")
    assert result.status == "failed" and "context window" in result.reason
    assert len([r for r in server.requests if r.method == "POST"]) == 2


def test_missing_usage_is_estimated_and_marked_on_every_call(spec):
    with ScriptedLLM(ONE_ROUND, quirks="no-usage") as server:
        result, sink = run(spec, server, "gpt-4o")
    assert result.status == "succeeded" and result.tokens_in > 0
    assert all(c.estimated_tokens and c.tokens_in > 0 for c in sink.calls)


def test_an_unpriced_model_reports_unknown_cost_not_zero(spec):
    with ScriptedLLM(ONE_ROUND) as server:
        result, sink = run(spec, server, "my-local-llama")
    assert result.status == "succeeded"
    assert all(c.priced is False and c.cost_usd == 0 for c in sink.calls)


@pytest.mark.parametrize("profile", ["vllm-reasoning", "deepseek-reasoner", "ollama"])
def test_every_reasoning_style_ends_beside_the_answer_never_in_it(spec, profile):
    steps = [dict(step, reasoning="weigh the loads") for step in ONE_ROUND]
    with ScriptedLLM(steps, quirks=profile) as server:
        result, sink = run(spec, server, "scripted-model")
    assert result.status == "succeeded"
    assert all(c.reasoning == "weigh the loads" and "weigh" not in c.response for c in sink.calls)
