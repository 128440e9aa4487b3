"""Algorithm 1's control flow with scripted agents.

The LLM is the in-process ScriptedChatClient; the engine is replaced by a scripted evaluator that
reads the verdict the test wrote into each candidate (`// outcome: ok 1.8`), because this machine has
no GPU to time kernels. The real engine under the real pipeline runs in the GPU tests and the
Celery end-to-end test.
"""

from __future__ import annotations

import pytest

from tests.support.scripted_eval import COMMAND, PLAN, ScriptedEvaluator, kernel
from tests.support.specs import write_task
from worker.agents.llm import LLMError, LLMResponse, ScriptedChatClient
from worker.agents.pipeline import Pipeline, PipelineConfig
from worker.engine.results import Verdict
from worker.formats.cuda.spec import load_spec


class ListSink:
    def __init__(self, cancel_after_events: int | None = None):
        self.events: list[tuple[str, dict]] = []
        self.turns: dict[tuple[int, int], object] = {}
        self.turn_log: list[tuple[tuple[int, int], bool]] = []
        self.calls: list[tuple[tuple[int, int], object]] = []
        self.cancel_after = cancel_after_events

    def event(self, type, payload):
        self.events.append((type, payload))

    def turn(self, record):
        self.turns[record.key] = record
        self.turn_log.append((record.key, record.finished))

    def agent_call(self, turn, record):
        assert turn in self.turns, "an agent call must belong to a turn that was reported first"
        self.calls.append((turn, record))

    def cancelled(self):
        return self.cancel_after is not None and len(self.events) >= self.cancel_after

    def types(self):
        return [t for t, _ in self.events]


@pytest.fixture
def spec(tmp_path):
    return load_spec(write_task(tmp_path, "vadd") / "spec.toml")


def run(spec, answers, *, rounds=1, debug_rounds=2, sink=None, evaluator=None, **config):
    evaluator = evaluator or ScriptedEvaluator(spec)
    client = ScriptedChatClient(list(answers))
    sink = sink or ListSink()
    pipeline = Pipeline(spec, "fp32", PipelineConfig(model="m", rounds=rounds, debug_rounds=debug_rounds, **config),
                        client, sink, evaluate_fn=evaluator, evaluate_baseline_fn=evaluator.baseline)
    return pipeline.run(), sink, client, evaluator


def test_a_faster_valid_candidate_becomes_the_best(spec):
    result, sink, client, evaluator = run(spec, [PLAN, kernel("ok 1.8"), COMMAND])
    assert (result.status, result.best_turn, result.best_score) == ("succeeded", (1, 0), 1.8)
    assert [r.role for _, r in sink.calls] == ["planner", "coder", "compiler"]
    assert evaluator.calls[0][1] == COMMAND  # the Compiler agent's command reaches the engine
    assert "vadd_optimized" in sink.turns[(1, 0)].code and sink.turns[(1, 0)].valid
    assert "best.updated" in sink.types()


def test_every_agent_gets_its_model_the_temperature_and_the_seed(spec):
    _, _, client, _ = run(spec, [PLAN, kernel("ok 1.8"), COMMAND], seed=7, temperature=0.5,
                          agent_models={"coder": "big"})
    assert client.options == [
        {"model": "m", "temperature": 0.5, "seed": 7},
        {"model": "big", "temperature": 0.5, "seed": 7},
        {"model": "m", "temperature": 0.5, "seed": 7},
    ]


def test_a_regression_is_rejected_and_the_planner_hears_why(spec):
    answers = [PLAN, kernel("ok 1.5"), COMMAND, PLAN, kernel("ok 1.2"), COMMAND, PLAN, kernel("ok 1.1"), COMMAND]
    result, sink, client, _ = run(spec, answers, rounds=3)
    assert (result.best_turn, result.best_score) == ((1, 0), 1.5)
    third_planner_prompt = client.calls[6][-1]["content"]
    assert "The previous plan failed: the kernel was correct but not faster: P 1.200" in third_planner_prompt
    assert "P 1.500" in third_planner_prompt
    second_planner_prompt = client.calls[3][-1]["content"]
    assert "The previous plan worked" in second_planner_prompt


def test_a_compile_error_is_fixed_in_a_debug_round(spec):
    answers = [PLAN, kernel("compile_error"), COMMAND, "Declare x before use.", kernel("ok 2.0"), COMMAND]
    result, sink, client, _ = run(spec, answers)
    assert (result.best_turn, result.best_score) == ((1, 1), 2.0)
    debug_prompt = client.calls[3][-1]["content"]
    assert 'identifier "x" is undefined' in debug_prompt  # the Debug agent saw the compile log
    fix_prompt = client.calls[4][-1]["content"]
    assert "Declare x before use." in fix_prompt
    assert sink.turns[(1, 1)].kind == "debug" and sink.turns[(1, 1)].parent == (1, 0)


def test_a_wrong_result_that_debug_cannot_fix_marks_the_scheme_invalid(spec):
    answers = [PLAN, kernel("incorrect"), COMMAND]
    for _ in range(2):
        answers += ["Index is off by one.", kernel("incorrect"), COMMAND]
    answers += [PLAN, kernel("ok 1.3"), COMMAND]
    result, sink, client, _ = run(spec, answers, rounds=2, debug_rounds=2)
    assert (result.best_turn, result.best_score) == ((2, 0), 1.3)
    assert [k for k, finished in sink.turn_log if finished] == [(0, 0), (1, 0), (1, 1), (1, 2), (2, 0)]
    assert not any(sink.turns[k].valid for k in [(1, 0), (1, 1), (1, 2)])
    debug_prompt = client.calls[3][-1]["content"]
    assert '"index": 7' in debug_prompt  # the first-mismatch JSON
    planner_round_2 = client.calls[9][-1]["content"]
    assert "no valid kernel after 2 fix attempt(s); last verdict incorrect" in planner_round_2


def test_the_best_is_kept_when_every_round_fails(spec):
    answers = [PLAN, kernel("incorrect"), COMMAND]
    result, *_ = run(spec, answers, debug_rounds=0)
    assert (result.status, result.best_turn, result.best_score) == ("succeeded", (0, 0), 1.0)


def test_an_answer_without_code_is_an_invalid_turn_with_a_clear_reason(spec):
    answers = [PLAN, "I would rather not write code.", kernel("ok 1.4"), COMMAND]  # no Debug agent: Coder retries
    result, sink, client, _ = run(spec, answers, debug_rounds=1)
    first = sink.turns[(1, 0)]
    assert first.verdict == "no_code" and "held no usable code" in first.reason
    assert result.best_turn == (1, 1)


def test_no_compiler_agent_means_default_flags(spec):
    result, sink, client, evaluator = run(spec, [PLAN, kernel("ok 1.2")], use_compiler_agent=False)
    assert evaluator.calls[0][1].startswith("nvcc -O3 -arch=sm_90")
    assert [r.role for _, r in sink.calls] == ["planner", "coder"]


def test_single_run_ablation_has_no_optimization_rounds(spec):
    result, sink, client, _ = run(spec, [], rounds=0)
    assert (result.status, result.best_turn, result.turns) == ("succeeded", (0, 0), 1)


def test_a_baseline_that_cannot_run_fails_the_run_with_its_reason(spec):
    evaluator = ScriptedEvaluator(spec, baseline_verdict=Verdict.NO_GPU)
    result, sink, client, _ = run(spec, [PLAN], evaluator=evaluator)
    assert result.status == "failed" and "no GPU here" in result.reason
    assert client.calls == []  # no LLM tokens spent on a run that cannot be evaluated


def test_a_fatal_llm_error_fails_the_run_and_is_recorded(spec):
    error = LLMError("the endpoint rejected the API key; update it in the admin", retriable=False, attempts=1)
    result, sink, *_ = run(spec, [error])
    assert result.status == "failed" and "update it in the admin" in result.reason
    assert sink.calls[0][1].error.startswith("the endpoint rejected")
    assert result.best_turn == (0, 0)


def test_token_budget_stops_early_but_keeps_the_best(spec):
    big = LLMResponse(text=PLAN, model="m", tokens_in=900, tokens_out=200, cost_usd=0.5, latency_s=0.1, attempts=1,
                      finish_reason="stop", priced=True, estimated_tokens=False)
    result, sink, client, _ = run(spec, [big, kernel("ok 1.1")], token_budget=1000)
    assert result.status == "succeeded" and "token budget of 1000 is spent" in result.reason
    assert (result.tokens_in, result.tokens_out, result.cost_usd) == (900, 200, 0.5)


def test_cancellation_stops_at_the_next_step(spec):
    sink = ListSink(cancel_after_events=4)
    result, sink, client, _ = run(spec, [PLAN, kernel("ok 1.8"), COMMAND], sink=sink)
    assert result.status == "cancelled"
    assert len(client.calls) < 3


def test_events_tell_the_story_in_order(spec):
    result, sink, *_ = run(spec, [PLAN, kernel("ok 1.8"), COMMAND])
    types = sink.types()
    assert types[:2] == ["turn.started", "turn.finished"]  # the baseline
    assert types.index("agent.started") < types.index("turn.code") < types.index("compile.started")
    code_event = dict(sink.events)["turn.code"]
    assert code_event["diff"].startswith("--- baseline\n+++ turn 1.0")
    assert "+extern \"C\" void vadd_optimized" in code_event["diff"]
    assert code_event["diff_baseline"].startswith("--- baseline\n+++ turn 1.0")
    finished = [p for t, p in sink.events if t == "turn.finished"][-1]
    assert finished["score"] == 1.8 and finished["sizes"][0]["speedup"] == 1.8


def test_invalid_configuration_is_refused():
    with pytest.raises(ValueError, match="profile_mode"):
        PipelineConfig(model="m", profile_mode="sometimes")
    with pytest.raises(ValueError, match="timing_protocol must be one of"):
        PipelineConfig(model="m", timing_protocol="fastest")
    with pytest.raises(ValueError, match="unknown roles"):
        PipelineConfig(model="m", agent_models={"reviewer": "x"})


class OptionsRecorder(ScriptedEvaluator):
    """The scripted evaluator, keeping the EvalOptions the pipeline hands it for the baseline and each turn."""

    def __init__(self, spec):
        super().__init__(spec)
        self.options = []

    def baseline(self, spec, precision, options):
        self.options.append(options)
        return super().baseline(spec, precision, options)

    def __call__(self, spec, precision, code, flags, options):
        self.options.append(options)
        return super().__call__(spec, precision, code, flags, options)


@pytest.mark.parametrize(("protocol", "queued"), [("queued", True), ("synchronized", False)])
def test_the_timing_protocol_decides_how_the_baseline_and_every_turn_are_timed(spec, protocol, queued):
    recorder = OptionsRecorder(spec)
    run(spec, [PLAN, kernel("ok 1.8"), COMMAND], evaluator=recorder, timing_protocol=protocol, profile_mode="full")
    assert len(recorder.options) == 2  # the baseline, then turn 1.0
    assert all(o.queued_timing is queued and o.profile == "full" for o in recorder.options)


def test_a_synchronized_run_is_timed_synchronized_whatever_its_base_options_say():
    from worker.engine.context import EvalOptions

    config = PipelineConfig(model="m", eval_options=EvalOptions(queued_timing=True, iters=20))
    assert config.timing_protocol == "synchronized"
    assert config.evaluation_options().queued_timing is False and config.evaluation_options().iters == 20


def test_a_headless_trajectory_round_trips_through_json(spec, tmp_path):
    import json

    from worker.agents.trajectory import TrajectorySink, load
    from worker.engine import toolchain as tc

    sink = TrajectorySink()
    answers = [PLAN, kernel("compile_error"), COMMAND, "Declare x.", kernel("ok 2.0"), COMMAND]
    result, sink, *_ = run(spec, answers, sink=sink)
    config = PipelineConfig(model="m", rounds=1, debug_rounds=2, timing_protocol="queued")
    document = sink.document(spec=spec, precision="fp32", config=config, result=result, chain=tc.detect())
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    data = load(path)
    assert [(t["round_index"], t["debug_index"], t["verdict"]) for t in data["turns"]] == [
        (0, 0, "ok"), (1, 0, "compile_error"), (1, 1, "ok")
    ]
    assert [c["role"] for c in data["turns"][1]["agent_calls"]] == ["planner", "coder", "compiler"]
    assert data["result"]["best_turn"] == [1, 1] and data["events"][0]["type"] == "turn.started"
    assert data["config"]["timing_protocol"] == "queued"  # what import_trajectory gives the run


def test_a_file_that_is_not_a_trajectory_is_refused_clearly(tmp_path):
    from worker.agents.trajectory import load

    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a KernelWeb trajectory"):
        load(path)
