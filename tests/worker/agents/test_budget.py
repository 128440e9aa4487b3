"""The context budget: the estimate, the trimming ladder and what each agent keeps longest."""

from __future__ import annotations

import pytest

from tests.support.scripted_eval import ScriptedEvaluator
from tests.support.specs import write_task
from worker.agents import budget, prompts
from worker.formats.cuda.spec import load_spec

HW = prompts.HardwareInfo("NVIDIA H100 80GB HBM3", compute_capability="9.0")


@pytest.fixture
def spec(tmp_path):
    return load_spec(write_task(tmp_path, "vadd") / "spec.toml")


def test_the_estimate_over_counts_rather_than_under():
    code = "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n" * 100
    assert budget.estimate_text_tokens(code) >= len(code) / 4  # more than the usual 4 characters per token
    assert budget.estimate_text_tokens("") == 0 and budget.estimate_text_tokens("ab") == 1
    messages = [{"role": "user", "content": "x" * 300}]
    assert budget.estimate_prompt_tokens(messages) == 100 + budget.MESSAGE_OVERHEAD_TOKENS + 3


def test_without_a_window_the_prompt_is_sent_whole_with_the_requested_limit():
    fitted = budget.fit(lambda limits: [{"role": "user", "content": "y" * 90_000}], None, 8192)
    assert (fitted.level, fitted.max_tokens, fitted.window, fitted.note) == (0, 8192, None, "")


def test_a_prompt_that_fits_is_untouched_and_the_answer_limit_is_what_the_window_leaves():
    fitted = budget.fit(lambda limits: [{"role": "user", "content": "z" * 3000}], 4096, 8192)
    assert fitted.level == 0 and fitted.note == ""
    assert fitted.max_tokens == 4096 - fitted.estimate - budget.margin(4096)


def test_the_planner_gives_up_the_previous_plan_and_the_metrics_before_the_code(spec):
    evaluator = ScriptedEvaluator(spec)
    code = spec.baseline_source("fp32").read_text()
    plan = "Tile the loads. " * 400

    def build(limits):
        return prompts.planner_messages(task=spec, precision="fp32", hardware=HW, code=code,
                                        results=evaluator.sizes(1.2), previous_plan=plan,
                                        previous_failure="it did not compile", limits=limits)

    full = budget.estimate_prompt_tokens(build(budget.LEVELS[0]))
    fitted = budget.fit(build, full + 600, 8192)  # room for the prompt, but not for a quarter-window answer
    assert fitted.level > 0 and "previous plan" in fitted.note
    user = fitted.messages[1]["content"]
    assert code.strip() in user  # the code is whole
    assert "The previous plan failed: it did not compile" in user  # the verdict stays when the text goes
    assert user.count("Tile the loads.") < plan.count("Tile the loads.")


def test_the_debug_agent_keeps_the_head_and_tail_of_a_long_log(spec):
    code = spec.baseline_source("fp32").read_text()
    log = "error: first problem here\n" + "note: noise\n" * 5000 + "1 error detected in the compilation\n"

    def build(limits):
        return prompts.debug_messages(task=spec, precision="fp32", hardware=HW, code=code, kind="compile",
                                      log=log, limits=limits)

    full = budget.estimate_prompt_tokens(build(budget.LEVELS[0]))
    fitted = budget.fit(build, full, 2048)
    user = fitted.messages[1]["content"]
    assert fitted.level >= 1 and fitted.estimate < full
    assert "error: first problem here" in user and "1 error detected" in user and "characters left out" in user
    assert code.strip() in user


def test_nothing_fits_a_window_smaller_than_the_rules_themselves(spec):
    code = spec.baseline_source("fp32").read_text()
    with pytest.raises(budget.ContextBudgetError, match="even trimmed"):
        budget.fit(lambda limits: prompts.coder_messages(task=spec, precision="fp32", hardware=HW, code=code,
                                                        instructions="go", limits=limits), 500, 8192)


def test_each_step_of_the_ladder_trims_at_least_as_much_as_the_one_before():
    for before, after in zip(budget.LEVELS, budget.LEVELS[1:], strict=False):
        assert after.log <= before.log and after.code <= before.code
        assert after.note
