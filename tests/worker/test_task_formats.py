"""One loader and one runner for the three task formats, the prompts and code extraction per format, the
pipeline's control flow on the new formats, and the converters behind the importers."""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from pathlib import Path

import pytest

from testing.scripted_llm import ScriptedLLM
from tests.support.formats import EXAMPLE_TASKS, MATMUL, write_kernelbench_checkout, write_yaml_task
from worker.agents import prompts
from worker.agents.llm import OpenAIChatClient
from worker.agents.pipeline import Pipeline, PipelineConfig
from worker.engine.extract import extract_python_module, extract_source_file
from worker.engine.results import Evaluation, SizeResult, TimingStats, Verdict
from worker.engine.taskspec import SpecError
from worker.formats.cuda.evaluation import EvalOptions
from worker.formats.pytorch.spec import load_pytorch_spec
from worker.importers import convert_kernelbench, convert_taskyaml, find_kernelbench, taskyaml_folders
from worker.registry import discover_tasks, load_task

H100 = prompts.HardwareInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0")


def kb_spec():
    return load_task(EXAMPLE_TASKS / "kernelbench-examples" / "scale_bias_leaky_relu")


def yaml_spec():
    return load_task(EXAMPLE_TASKS / "cudahercules-examples" / "vector_add_make")


# ---------------------------------------------------------------------------------------------- loading


def test_the_shipped_library_holds_all_three_formats():
    found = discover_tasks(EXAMPLE_TASKS)
    assert found.errors == ()
    backends = {s.backend for s in found.specs}
    assert backends == {"cuda", "pytorch", "make"}
    assert len([s for s in found.specs if s.backend == "cuda"]) == 50
    only = discover_tasks(EXAMPLE_TASKS, backends=("make",))
    assert [s.name for s in only.specs] == ["vector_add_make"] and only.specs[0].suite == "cudahercules-examples"


def test_a_folder_with_both_spec_files_or_an_unknown_backend_is_reported_not_loaded(tmp_path):
    both = write_yaml_task(tmp_path / "suite", "gemm_softmax")
    (both / "spec.toml").write_text('name = "gemm_softmax"\n', encoding="utf-8")
    odd = tmp_path / "suite" / "odd"
    odd.mkdir()
    (odd / "spec.toml").write_text('backend = "triton"\nname = "odd"\n', encoding="utf-8")
    found = discover_tasks(tmp_path)
    messages = sorted(str(e) for e in found.errors)
    assert found.specs == ()
    assert any("both spec.toml and task.yaml" in m for m in messages)
    assert any("'triton' is not a spec.toml backend" in m for m in messages)
    with pytest.raises(SpecError, match="exactly one spec file"):
        load_task(both)


def test_every_backend_offers_the_members_the_app_uses():
    for spec in (load_task(EXAMPLE_TASKS / "mskernelbench" / "softmax"), kb_spec(), yaml_spec()):
        for precision in spec.precisions:
            assert spec.baseline_source(precision).is_file()
            assert all(p.is_file() for p in spec.source_files(precision))
            tolerance = spec.tolerance(precision)
            assert tolerance.atol > 0 and tolerance.rtol > 0 and tolerance.why
        assert spec.directory.is_dir() and spec.title and spec.category and spec.description
        assert all(spec.complexity_of(size) > 0 for size in spec.sizes)


# ---------------------------------------------------------------------------------------------- prompts


def test_kernelbench_prompts_ask_for_a_modelnew_file_and_show_the_reference_module():
    spec = kb_spec()
    coder = prompts.coder_messages(task=spec, precision="bf16", hardware=H100, code=spec.baseline_source("bf16")
                                   .read_text(), instructions="fuse the three passes")
    system, user = coder[0]["content"], coder[1]["content"]
    assert system.startswith("# Coder agent") and "class ModelNew(nn.Module)" in system and "load_inline" in system
    assert "```python" in system and "extern \"C\"" not in system
    assert "torch.bfloat16" in user and "get_inputs()" in user and "class Model(nn.Module)" in user
    assert "batch_size: 8192" in user
    planner = prompts.planner_messages(task=spec, precision="fp32", hardware=H100, code="x", results=[])
    assert "one PyTorch module" in planner[0]["content"] and "```python\nx\n```" in planner[1]["content"]
    debug = prompts.debug_messages(task=spec, precision="fp32", hardware=H100, code="x", kind="mismatch", log={})
    assert "ModelNew" in debug[0]["content"] and "_kernel_optimized" not in debug[0]["content"]


def test_task_yaml_prompts_name_the_solution_file_the_commands_and_the_restrictions():
    spec = yaml_spec()
    coder = prompts.coder_messages(task=spec, precision="fp32", hardware=H100, code="// naive", instructions="go")
    system, user = coder[0]["content"], coder[1]["content"]
    assert "`solution.cu`" in system and "must not match: `reference_vector_add`, `cublas`" in system
    assert "make test" in user and "./test" in user and "sm_80 or newer" in user
    assert "exit code 0 and output matching /^Passed$/" in user


def test_the_c_cuda_prompts_keep_their_structure_rules():
    spec = load_task(EXAMPLE_TASKS / "mskernelbench" / "vector_add")
    debug = prompts.debug_messages(task=spec, precision="fp32", hardware=H100, code="x", kind="compile", log="e")
    assert 'extern "C" void vector_add_optimized(...)' in debug[0]["content"]
    assert "The optimized entry point `vector_add_optimized`" in debug[0]["content"]


# ---------------------------------------------------------------------------------------------- extraction


def test_python_extraction_takes_the_last_block_that_defines_modelnew():
    answer = ("First the reference:\n```python\nclass Model(nn.Module):\n    pass\n```\nDraft:\n```python\n"
              "class ModelNew(nn.Module):\n    v = 1\n```\nFinal:\n```py\nimport torch\n\nclass ModelNew(nn.Module):\n"
              "    v = 2\n```\n")
    got = extract_python_module(answer)
    assert got.ok and got.defines_entry and "v = 2" in got.code and "last of 2" in got.reason


def test_python_extraction_refuses_truncated_or_missing_code():
    assert not extract_python_module("```python\nclass ModelNew:\n    pass\n", finish_reason="length").ok
    assert "never closed" in extract_python_module("```python\nclass ModelNew:\n    pass\n").reason
    assert "does not define class ModelNew" in extract_python_module("Just use torch.compile.").reason
    unfenced = extract_python_module("Here it is:\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n")
    assert unfenced.ok and unfenced.code.startswith("import torch")


def test_solution_file_extraction_prefers_a_block_named_after_the_file():
    answer = ("```cuda\n// helper\n```\n```solution.cu\n#include <cuda_runtime.h>\n__global__ void k() {}\n```\n"
              "```bash\nmake test\n```")
    got = extract_source_file(answer, "solution.cu")
    assert got.ok and "__global__ void k" in got.code
    assert not extract_source_file("```cuda\nvoid f() {\n```", "solution.cu").ok
    assert "no C/CUDA code" in extract_source_file("No code today.", "solution.cu").reason


# ---------------------------------------------------------------------------------------------- pipeline


class _Sink:
    def __init__(self):
        self.events, self.turns = [], {}

    def event(self, type, payload):
        self.events.append(type)

    def turn(self, record):
        self.turns[record.key] = record

    def agent_call(self, turn, record):
        pass

    def cancelled(self):
        return False


def _timed(spec, speedup: float) -> Evaluation:
    base = TimingStats(50, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0)
    cand = dataclasses.replace(base, mean_ms=2.0 / speedup, median_ms=2.0 / speedup)
    size = SizeResult(0, dict(spec.sizes[0]) if spec.sizes else {}, 1.0, True, baseline=base, candidate=cand,
                      speedup=speedup)
    return Evaluation(spec.name, "fp32", Verdict.OK, sizes=(size,), score=speedup, geomean_speedup=speedup)


@pytest.mark.parametrize("which", ["pytorch", "make"])
def test_the_pipeline_runs_the_new_formats_without_a_compiler_agent(which):
    spec = kb_spec() if which == "pytorch" else yaml_spec()
    fence = "python" if which == "pytorch" else "cuda"
    code = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n" if which == "pytorch" else "// fast\n"
    script = [{"agent": "planner", "content": "Fuse it."}, {"agent": "coder", "content": f"```{fence}\n{code}```"}]
    seen = []

    def fake_evaluate(spec_, precision, source, flags, options):
        seen.append((source, flags))
        return _timed(spec_, 2.5)

    with ScriptedLLM(script) as server:
        client = OpenAIChatClient(server.base_url, "none", "scripted")
        sink = _Sink()
        result = Pipeline(spec, "fp32", PipelineConfig(model="scripted", rounds=1, debug_rounds=0), client, sink,
                          hardware=H100, evaluate_fn=fake_evaluate,
                          evaluate_baseline_fn=lambda s, p, o: _timed(s, 1.0)).run()
        agents = [r.agent for r in server.requests]
    assert result.status == "succeeded" and result.best_score == 2.5
    assert agents == ["planner", "coder"]  # the build is the task's own: no Compiler agent
    assert seen == [(code.strip(), "")]
    assert sink.turns[(1, 0)].valid and sink.turns[(0, 0)].code == spec.baseline_source("fp32").read_text()


# ---------------------------------------------------------------------------------------------- converters


def test_kernelbench_conversion_writes_one_task_per_problem_and_reports_the_rest(tmp_path):
    checkout = write_kernelbench_checkout(tmp_path / "kb")
    files = find_kernelbench(checkout)
    assert sorted(f.name for f in files) == ["1_Square_matrix_multiplication_.py", "3_Add_bias_ReLU.py",
                                             "7_Broken_problem.py", "helpers.py"]  # src/ is not the dataset
    report = convert_kernelbench([(f, f.name) for f in files], tmp_path / "tasks")
    assert sorted(report.written) == ["kernelbench-l1/1_Square_matrix_multiplication",
                                      "kernelbench-l2/3_Add_bias_ReLU"]
    reasons = {s.source: s.reason for s in report.skipped}
    assert "get_inputs" in reasons["7_Broken_problem.py"]
    assert "not a KernelBench problem file name" in reasons["helpers.py"]
    l1 = load_pytorch_spec(tmp_path / "tasks" / "kernelbench-l1" / "1_Square_matrix_multiplication" / "spec.toml")
    l2 = load_task(tmp_path / "tasks" / "kernelbench-l2" / "3_Add_bias_ReLU")
    assert (l1.category, l1.forbid_torch_compute, l1.sizes) == ("dense_linear_algebra", True, ({"N": 64},))
    assert (l2.category, l2.forbid_torch_compute) == ("fusion", False)
    assert l1.baseline_source("fp32").read_text() == MATMUL  # the problem file, verbatim
    assert [f.name for f in find_kernelbench(checkout, level=2)] == ["3_Add_bias_ReLU.py"]


def test_a_second_conversion_of_the_same_files_changes_nothing_on_disk(tmp_path):
    checkout = write_kernelbench_checkout(tmp_path / "kb")
    files = [(f, f.name) for f in find_kernelbench(checkout)]
    convert_kernelbench(files, tmp_path / "tasks")
    spec_file = tmp_path / "tasks" / "kernelbench-l1" / "1_Square_matrix_multiplication" / "spec.toml"
    os.utime(spec_file, (1_000_000, 1_000_000))
    again = convert_kernelbench(files, tmp_path / "tasks")
    assert len(again.written) == 2 and spec_file.stat().st_mtime == 1_000_000


def test_files_without_a_level_folder_need_the_level_given(tmp_path):
    (tmp_path / "5_Mul.py").write_text(MATMUL, encoding="utf-8")
    pairs = [(tmp_path / "5_Mul.py", "5_Mul.py")]
    assert "the level is unknown" in convert_kernelbench(pairs, tmp_path / "out").skipped[0].reason
    assert convert_kernelbench(pairs, tmp_path / "out", level=3).written == ("kernelbench-l3/5_Mul",)


def test_task_yaml_conversion_files_folders_under_the_suite_by_their_name(tmp_path):
    write_yaml_task(tmp_path / "src" / "class1", "07_gemm_softmax")  # a numeric prefix, as CUDAHercules has
    write_yaml_task(tmp_path / "src" / "class1", "bad_regex", **{
        'kernel_time_ms_regex: "Kernel time:\\\\s*([0-9.]+)\\\\s*ms"': 'kernel_time_ms_regex: "Kernel time: (["'})
    folders = taskyaml_folders(tmp_path / "src")
    report = convert_taskyaml([(f, f.name) for f in folders], tmp_path / "tasks", suite="hercules")
    assert report.written == ("hercules/gemm_softmax",)
    assert (tmp_path / "tasks" / "hercules" / "gemm_softmax" / "solution.h").is_file()
    assert [s.source for s in report.skipped] == ["bad_regex"]
    assert "kernel_time_ms_regex" in report.skipped[0].reason


def test_the_registry_refuses_an_unknown_format():
    from worker import registry

    @dataclasses.dataclass
    class Odd:
        backend: str = "triton"

    with pytest.raises(ValueError, match="unknown task format 'triton'"):
        registry.evaluate(Odd(), "fp32", "", None, EvalOptions())


REPO = Path(__file__).resolve().parents[2]
_NAME_BRANCH = re.compile(r"""backend\s*(==|!=|in\b)|\.backend\s*(==|!=)|backend\s*==\s*["']""")


def test_nothing_outside_the_registry_branches_on_a_formats_name():
    """A fourth format touches only its package and the registry: nothing else tests `backend`."""
    found = []
    for path in [*REPO.glob("worker/**/*.py"), *REPO.glob("apps/**/*.py"), *REPO.glob("templates/**/*.html")]:
        if path == REPO / "worker" / "registry.py" or "migrations" in path.parts:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _NAME_BRANCH.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {f"{node.module}.{alias.name}" for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}
    return names


def test_the_layers_import_only_downwards():
    """engine: no format, agent or registry; a format: the engine and itself; agents: engine and registry."""
    forbidden = ("worker.formats", "worker.agents", "worker.registry")
    for path in (REPO / "worker" / "engine").glob("*.py"):
        assert not {m for m in _imports(path) if m.startswith(forbidden)}, path
    for package in (REPO / "worker" / "formats").iterdir():
        if not (package / "plugin.py").is_file():
            continue
        own = f"worker.formats.{package.name}"
        for path in package.glob("*.py"):
            bad = {m for m in _imports(path) if m.startswith(forbidden) and not m.startswith(own)}
            assert not bad, (path, bad)
    for path in (REPO / "worker" / "agents").glob("*.py"):
        assert not {m for m in _imports(path) if m.startswith("worker.formats")}, path


def test_every_format_says_how_it_is_shown_prompted_and_extracted():
    from worker import registry

    for fmt in registry.FORMATS.values():
        assert fmt.language in ("cuda", "python")
        assert fmt.display.baseline_name and fmt.display.candidate_help
        assert fmt.display.interface_template == f"formats/{fmt.name}/interface.html"
        assert (REPO / "worker" / "formats" / fmt.name / "templates" / fmt.display.interface_template).is_file()
        assert fmt.prompts.planner_subject and fmt.prompts.planner_structure
    assert [f.name for f in registry.FORMATS.values() if f.compile_flags] == ["cuda"]


def test_a_kernelbench_candidate_on_a_host_without_a_gpu_ends_with_no_gpu(tmp_path):
    import dataclasses as dc

    from worker.engine import toolchain
    from worker.registry import evaluate

    chain = dc.replace(toolchain.detect(), gpu=None, gpu_reason="no GPU in this test")
    spec = load_task(EXAMPLE_TASKS / "kernelbench-examples" / "matmul_square")
    source = (EXAMPLE_TASKS.parent / "demo" / "formats" / "matmul_square_tiled.py").read_text()
    options = EvalOptions(build_cache=str(tmp_path / "cache"), timing_cache=str(tmp_path / "times"))
    ev = evaluate(spec, "fp32", source, None, options, chain=chain)
    # A CPU-only PyTorch cannot even build the CUDA extension: the missing GPU is what is reported.
    assert ev.verdict == Verdict.NO_GPU and "no GPU in this test" in ev.reason
