"""The 12-task experiment's scripted conversation (demo/experiment/script.json), checked without a GPU.

Every run of the experiment plays through the real pipeline (worker.agents.pipeline.Pipeline, R=1, D=1) with the
real task specs and prompts, against the scripted OpenAI-compatible server over HTTP, two runs at a time
as on the GPU host's worker. Only the GPU is stood in for: the evaluator applies the real static checks
and returns the verdict the script's "tasks" list expects for each candidate file. With nvcc, every
candidate file also goes through the engine's real build (compile-only), with the scripted nvcc command.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from testing.experiment_outcomes import ExpectedOutcomes
from testing.scripted_llm import ScriptedLLM, load_script
from worker.agents import prompts
from worker.agents.llm import OpenAIChatClient
from worker.agents.pipeline import Pipeline, PipelineConfig
from worker.engine.results import Verdict
from worker.formats.cuda.evaluation import EvalOptions, evaluate
from worker.formats.cuda.spec import load_spec

REPO = Path(__file__).parents[3]
EXPERIMENT = REPO / "demo" / "experiment"
SCRIPT = EXPERIMENT / "script.json"
DATA = json.loads(SCRIPT.read_text(encoding="utf-8"))
TASKS = DATA["tasks"]
SPECS = {t["operator"]: load_spec(REPO / "tasks" / "mskernelbench" / t["operator"] / "spec.toml") for t in TASKS}
H100 = prompts.HardwareInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0",
                            **prompts.known_specs("NVIDIA H100 80GB HBM3"))


def _generator():
    spec = importlib.util.spec_from_file_location("experiment_make_script", EXPERIMENT / "make_script.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _task_id(task: dict) -> str:
    return f"{task['operator']}-{task['precision']}"


class Recorder:
    def __init__(self):
        self.turns: dict[tuple[int, int], object] = {}
        self.calls: list[tuple[tuple[int, int], object]] = []

    def event(self, type, payload):
        pass

    def turn(self, record):
        self.turns[record.key] = record

    def agent_call(self, turn, record):
        self.calls.append((turn, record))

    def cancelled(self):
        return False


def test_script_json_is_what_the_generator_builds_from_the_kernel_files():
    generator = _generator()
    assert generator.build() == DATA
    assert generator.main(["--check"]) == 0  # byte for byte: regenerating the script gives the same file
    steps, models = load_script(SCRIPT)  # the server accepts it
    assert models == ["scripted"] and len(steps) == len(DATA["steps"])


RECORDED = sorted(p for p in (REPO / "demo" / "experiments").iterdir() if (p / "experiment.json").is_file())


@pytest.mark.parametrize("folder", RECORDED, ids=[p.name for p in RECORDED])
def test_the_recorded_experiment_was_played_from_this_script_and_these_kernels(folder):
    # demo/experiments/ holds experiments measured on a GPU with this script: each run's candidates are the
    # kernel files the script names, its agents' answers are the script's steps for that task, in order, and
    # the GPU gave each candidate the verdict the script expects.
    tasks = {(t["operator"], t["precision"]): t for t in TASKS}
    members = json.loads((folder / "experiment.json").read_text(encoding="utf-8"))["members"]
    assert members
    for member in members:
        run = json.loads((folder / member["trajectory"]).read_text(encoding="utf-8"))
        task = tasks[(run["task"], run["precision"])]
        candidates = [t for t in run["turns"] if (t["round_index"], t["debug_index"]) != (0, 0)]
        name = _task_id(task)
        assert [t["code"] for t in candidates] == [(REPO / f).read_text(encoding="utf-8").strip()
                                                   for f in task["candidates"]], name
        assert [t["verdict"] for t in candidates] == task["verdicts"], name
        marker = f"(`{task['entry']}`, {task['precision'].upper()})"
        code_marker = f"void {task['entry']}_optimized("
        own = [s["content"] for s in DATA["steps"] if s["match"]["user_contains"] in (marker, code_marker)]
        answers = [call["response"] for turn in run["turns"] for call in turn["agent_calls"]]
        assert answers == own, name


def test_each_task_marker_is_in_its_own_prompts_and_in_no_other_tasks():
    markers = {_task_id(t): f"(`{t['entry']}`, {t['precision'].upper()})" for t in TASKS}
    for task in TASKS:
        spec = SPECS[task["operator"]]
        baseline = spec.baseline_source(task["precision"]).read_text(encoding="utf-8")
        user = prompts.coder_messages(task=spec, precision=task["precision"], hardware=H100, code=baseline,
                                      instructions="plan")[-1]["content"]
        found = [name for name, marker in markers.items() if marker in user]
        assert found == [_task_id(task)]


def test_every_coder_step_is_matched_by_the_real_prompt_of_its_task():
    with ScriptedLLM(SCRIPT) as server:
        client = OpenAIChatClient(server.base_url, "none", "scripted", timeout_s=10)
        for task in TASKS:
            spec = SPECS[task["operator"]]
            baseline = spec.baseline_source(task["precision"]).read_text(encoding="utf-8")
            messages = prompts.coder_messages(task=spec, precision=task["precision"], hardware=H100, code=baseline,
                                              instructions="plan")
            answer = client.chat(messages)
            step = DATA["steps"][server.requests[-1].step]
            assert step["agent"] == "coder" and step["content"] == answer.text, _task_id(task)
            assert f'extern "C" void {task["entry"]}_optimized(' in answer.text
            assert answer.text.count("```cuda") == 1


def test_every_run_of_the_experiment_plays_through_the_pipeline_as_expected():
    engine = ExpectedOutcomes()
    config = PipelineConfig(model="scripted", rounds=1, debug_rounds=1, profile_mode="filtered", temperature=0)

    def one_run(task):
        spec = SPECS[task["operator"]]
        client = OpenAIChatClient(server.base_url, "none", "scripted", timeout_s=10)
        sink = Recorder()
        result = Pipeline(spec, task["precision"], config, client, sink, hardware=H100,
                          evaluate_fn=engine, evaluate_baseline_fn=engine.baseline).run()
        return task, result, sink

    # Two runs at a time, in an order unlike the script's, as on the GPU host (celery --concurrency 2).
    order = TASKS[1::2] + TASKS[0::2]
    with ScriptedLLM(SCRIPT) as server, ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(one_run, order))
        unmatched = [r for r in server.requests if r.step is None]
        assert unmatched == [] and server.remaining == 0

    steps = DATA["steps"]
    for task, result, sink in outcomes:
        name = _task_id(task)
        candidates = [sink.turns[key] for key in sorted(sink.turns) if key != (0, 0)]
        assert result.status == "succeeded", (name, result.reason)
        assert [t.verdict for t in candidates] == task["verdicts"], name
        assert [t.code for t in candidates] == [(REPO / f).read_text(encoding="utf-8").strip()
                                                for f in task["candidates"]], name
        expected_best = {"ok": (1, 0), "fixed": (1, 1), "fails": (0, 0)}[task["expect"]]
        assert result.best_turn == expected_best, name
        roles = [call.role for _, call in sink.calls]
        assert roles == (["planner", "coder", "compiler"] if task["expect"] == "ok"
                         else ["planner", "coder", "compiler", "debug", "coder", "compiler"]), name
        # Token accounting comes from the script's usage, step by step.
        marker = f"(`{task['entry']}`, {task['precision'].upper()})"
        code_marker = f"void {task['entry']}_optimized("
        own = [s for s in steps if s["match"]["user_contains"] in (marker, code_marker)]
        assert [c.tokens_in for _, c in sink.calls] == [s["usage"]["prompt_tokens"] for s in own], name
    commands = {(name, precision): flags for name, precision, _, flags in engine.calls}
    assert commands == {(t["operator"], t["precision"]): t["command"] for t in TASKS}


CANDIDATES = [(task, name, verdict) for task in TASKS for name, verdict in zip(task["candidates"], task["verdicts"],
                                                                              strict=True)]


@pytest.mark.parametrize(("task", "name", "verdict"), CANDIDATES, ids=[Path(c[1]).name for c in CANDIDATES])
def test_every_candidate_builds_with_its_scripted_command_as_expected(task, name, verdict, chain, shared_build_cache,
                                                                      tmp_path):
    spec = SPECS[task["operator"]]
    options = EvalOptions(build_cache=str(shared_build_cache), lock_dir=str(tmp_path / "locks"),
                          timing_cache=str(tmp_path / "times"))
    ev = evaluate(spec, task["precision"], (REPO / name).read_text(encoding="utf-8"), task["command"], options,
                  compile_only=True, chain=chain, work_dir=tmp_path / "work")
    assert not [n for n in ev.notes if "flags rejected" in n]  # the Compiler agent's command passes the whitelist
    if verdict == "compile_error":
        assert ev.verdict == Verdict.COMPILE_ERROR and ev.compile.role == "candidate"
        assert "too many arguments in function call" in ev.compile.log
    else:
        assert ev.verdict == Verdict.OK and ev.kind == "compile_only", ev.reason
        assert "warning" not in ev.compile.log.lower(), ev.compile.log
        assert ev.compile.resources and all(r.spill_stores == 0 for r in ev.compile.resources)
