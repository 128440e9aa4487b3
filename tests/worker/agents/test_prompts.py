"""The agents' prompts: hardware block, result and profile formats, each agent's rules, and that the
prompts are our own words rather than the paper's."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from testing.scripted_llm import ScriptedLLM, detect_agent
from worker.agents import prompts
from worker.agents.llm import OpenAIChatClient, RetryPolicy
from worker.agents.prompts import (
    HardwareInfo,
    clip,
    coder_messages,
    compiler_messages,
    debug_messages,
    describe_task,
    format_metrics,
    format_profiles,
    format_results,
    planner_messages,
)
from worker.engine.extract import extract_code, extract_command
from worker.engine.gpu import GpuInfo
from worker.engine.results import Bottleneck, Profile, SizeResult
from worker.engine.taskspec import Tolerance
from worker.formats.cuda.spec import TaskSpec, parse_signature

DEMO = Path(__file__).parents[3] / "demo" / "scripts" / "vector_add_demo.json"
PAPER = (
    Path(os.environ.get("KW_REFERENCE_DIR", "/work/shared/reference")) / "cudamaster-mskernelbench-paper.txt"
)
H100 = GpuInfo(0, "NVIDIA H100 80GB HBM3", "GPU-1234", "9.0", 81559, "550.54")
ALLOWED = ("-O0..-O3", "-arch=<the worker's sm_XX>", "--use_fast_math", "-lineinfo", "-Xptxas <-v,-O3,...>")


def make_task(**overrides) -> TaskSpec:
    fields = dict(
        name="vector_add",
        title="Vector Add",
        suite="mskernelbench",
        category="dense_linear_algebra",
        description="Add two vectors of length $N$: $C_i = A_i + B_i$.",
        complexity="N",
        outputs=("C",),
        provenance="MSKernelBench",
        interfaces={
            "fp32": parse_signature("void vector_add(const float* A, const float* B, float* C, int N)"),
            "bf16": parse_signature(
                "void vector_add_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N)"
            ),
        },
        sizes=({"N": 1024}, {"N": 262144}),
        tolerances={"bf16": Tolerance(1e-2, 2e-2, "one rounding")},
    )
    fields.update(overrides)
    return TaskSpec(**fields)


@pytest.fixture
def task() -> TaskSpec:
    return make_task()


@pytest.fixture
def hw() -> HardwareInfo:
    return HardwareInfo.from_gpu(H100)


def sizes() -> list[SizeResult]:
    return [
        SizeResult(0, {"N": 1024, "K": 4096}, 4194304, speedup=1.734),
        SizeResult(1, {"N": 2048, "K": 4096}, 8388608, speedup=0.5),
    ]


# -- hardware


def test_the_hardware_block_carries_the_gpus_numbers(hw):
    block = hw.describe()
    for expected in (
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "sm_90",
        "132",
        "3352 GB/s",
        "50 MiB",
        "48 KiB",
        "227 KiB",
        "65536",
        "81559 MiB",
    ):
        assert expected in block


def test_probed_values_win_and_unknown_gpus_show_only_what_is_known():
    probed = HardwareInfo.from_gpu(H100, sm_count=114, memory_bandwidth_gbs=2039.5)
    assert "SMs): 114" in probed.describe() and "2040 GB/s" in probed.describe()
    odd = HardwareInfo.from_gpu(GpuInfo(0, "Mystery GPU", "", "8.6", 0, ""))
    block = odd.describe()
    assert "Mystery GPU, compute capability 8.6 (sm_86)" in block
    assert "SMs" not in block and "bandwidth" not in block and "L2" not in block


def test_gpu_names_match_the_most_specific_known_model():
    assert HardwareInfo.from_gpu(GpuInfo(0, "NVIDIA H100 PCIe", "", "9.0", 0, "")).sm_count == 114
    assert HardwareInfo.from_gpu(GpuInfo(0, "NVIDIA H200", "", "9.0", 0, "")).memory_bandwidth_gbs == 4800
    assert HardwareInfo.from_gpu(GpuInfo(0, "NVIDIA GeForce RTX 4090", "", "8.9", 0, "")).sm_count == 128


# -- formats


def test_results_use_the_papers_layout_exactly():
    assert format_results(sizes()) == (
        "Test case size: N: 1024, K: 4096. Complexity: 4194304\n"
        "Speedup ratio: 1.73\n"
        "=====\n"
        "Test case size: N: 2048, K: 4096. Complexity: 8388608\n"
        "Speedup ratio: 0.50"
    )


def test_an_unmeasured_size_says_so():
    assert "Speedup ratio: not measured" in format_results([SizeResult(0, {"N": 8}, 8)])


def test_metrics_are_compact_lines_with_units():
    text = format_metrics(
        {
            "Duration": {"value": 12.3456, "unit": "us"},
            "DRAM Throughput": (85.0, "%"),
            "Registers Per Thread": 32,
            "Elapsed Cycles": {"value": 123456.78, "unit": "cycle"},
        }
    )
    assert text == (
        "- Duration: 12.35 us\n- DRAM Throughput: 85 %\n- Registers Per Thread: 32\n- Elapsed Cycles: 123457 cycle"
    )


def test_profiles_name_size_kernel_and_bottleneck_per_block():
    profiles = [
        Profile(
            0,
            {"N": 1024},
            "vector_add_kernel",
            Bottleneck.MEMORY_LATENCY,
            {"Memory Throughput": {"value": 3.2, "unit": "%"}},
            {},
        ),
        Profile(1, {"N": 262144}, "vector_add_kernel", Bottleneck.MEMORY_BANDWIDTH, {}, {}),
    ]
    assert format_profiles(profiles) == (
        "Test case size: N: 1024. Kernel: vector_add_kernel. Bottleneck: memory latency bound\n"
        "- Memory Throughput: 3.2 %\n"
        "=====\n"
        "Test case size: N: 262144. Kernel: vector_add_kernel. Bottleneck: memory bandwidth bound"
    )


def test_the_task_description_has_math_interface_sizes_dtype_and_tolerance(task):
    fp32 = describe_task(task, "fp32")
    assert "Vector Add" in fp32 and "$C_i = A_i + B_i$" in fp32
    assert "void vector_add(const float* A, const float* B, float* C, int N)" in fp32
    assert "- N: 262144 (complexity 262144)" in fp32 and "FP32" in fp32
    assert "atol = 0.0001, rtol = 0.0001" in fp32
    bf16 = describe_task(task, "bf16")
    assert "__nv_bfloat16" in bf16 and "atol = 0.01, rtol = 0.02" in bf16


def test_clip_keeps_the_head_and_the_tail():
    text = "HEAD" + "x" * 1000 + "TAIL"
    clipped = clip(text, 300)
    assert clipped.startswith("HEAD") and clipped.endswith("TAIL") and "characters left out" in clipped
    assert clip("short", 300) == "short"


# -- the agents


def test_every_builder_returns_a_system_and_a_user_message_headed_by_its_agent(task, hw):
    built = {
        "planner": planner_messages(task=task, precision="fp32", hardware=hw, code="x", results=sizes()),
        "coder": coder_messages(task=task, precision="fp32", hardware=hw, code="x", instructions="y"),
        "compiler": compiler_messages(
            hardware=hw, code="x", default_command="nvcc -O3", allowed_flags=ALLOWED
        ),
        "debug": debug_messages(
            task=task, precision="fp32", hardware=hw, code="x", kind="compile", log="err"
        ),
    }
    for agent, messages in built.items():
        assert [m["role"] for m in messages] == ["system", "user"]
        assert all(isinstance(m["content"], str) and m["content"] for m in messages)
        assert detect_agent(messages[0]["content"]) == agent
        assert "3352 GB/s" in messages[0]["content"]  # every agent sees the GPU


def test_the_planner_gets_results_profile_and_the_first_round_note(task, hw):
    messages = planner_messages(
        task=task, precision="fp32", hardware=hw, code="__global__ void k() {}", results=sizes()
    )
    system, user = messages[0]["content"], messages[1]["content"]
    assert "one optimization per round" in system and "No code" in system
    assert "cuBLAS" in system and "cuDNN" in system
    assert format_results(sizes()) in user
    assert "first optimization round" in user and "profiling is off" in user
    assert "```cuda\n__global__ void k() {}\n```" in user


def test_the_planner_hears_that_the_previous_plan_failed_and_why(task, hw):
    user = planner_messages(
        task=task,
        precision="fp32",
        hardware=hw,
        code="x",
        results=sizes(),
        previous_plan="Use float4 loads.",
        previous_failure="it did not compile after 3 debug rounds",
    )[1]["content"]
    assert "The previous plan failed: it did not compile after 3 debug rounds" in user
    assert "Use float4 loads." in user
    worked = planner_messages(
        task=task, precision="fp32", hardware=hw, code="x", results=sizes(), previous_plan="Use float4 loads."
    )[1]["content"]
    assert "previous plan worked" in worked and "failed" not in worked


def test_the_planner_sees_the_filtered_profile(task, hw):
    profile = Profile(
        0,
        {"N": 1024},
        "vector_add_kernel",
        Bottleneck.COMPUTE,
        {"Compute (SM) Throughput": {"value": 71.5, "unit": "%"}},
        {},
    )
    user = planner_messages(
        task=task, precision="fp32", hardware=hw, code="x", results=sizes(), profiles=[profile]
    )[1]["content"]
    assert "Bottleneck: compute bound\n- Compute (SM) Throughput: 71.5 %" in user


def test_a_task_that_allows_a_library_says_so(hw):
    system = planner_messages(
        task=make_task(allowed_libraries=("cublas",)),
        precision="fp32",
        hardware=hw,
        code="x",
        results=sizes(),
    )[0]["content"]
    assert "except cublas" in system


def test_the_coder_is_told_the_exact_entry_point_and_parameters(task, hw):
    system = coder_messages(task=task, precision="fp32", hardware=hw, code="x", instructions="y")[0][
        "content"
    ]
    assert 'extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N)' in system
    assert "_kernel_optimized" in system and "cudaDeviceSynchronize();" in system
    assert "no `main`" in system and "```cuda" in system
    bf16 = coder_messages(task=task, precision="bf16", hardware=hw, code="x", instructions="y")[0]["content"]
    assert (
        'extern "C" void vector_add_bf16_optimized(const __nv_bfloat16* A, const __nv_bfloat16* B, '
        "__nv_bfloat16* C, int N)"
    ) in bf16


def test_the_coder_gets_the_plan_or_the_fix_and_blocked_symbols(hw):
    task = make_task(blocked_symbols=("atomicAdd",))
    plan = coder_messages(task=task, precision="fp32", hardware=hw, code="old code", instructions="Tile it.")
    fix = coder_messages(
        task=task, precision="fp32", hardware=hw, code="old code", instructions="Guard i.", fix=True
    )
    assert "Optimization plan to implement\nTile it." in plan[1]["content"]
    assert "Fix to apply" in fix[1]["content"] and "Guard i." in fix[1]["content"]
    assert "`atomicAdd`" in plan[0]["content"]


def test_the_compiler_gets_the_whitelist_it_is_given_and_the_default_command(hw):
    messages = compiler_messages(
        hardware=hw,
        code="__global__ void k() {}",
        default_command="nvcc -O3 -arch=sm_90 -std=c++17",
        allowed_flags=ALLOWED,
    )
    system, user = messages[0]["content"], messages[1]["content"]
    for flag in ALLOWED:
        assert f"  - {flag}" in system
    assert "single line" in system and "sm_90" in system
    assert "nvcc -O3 -arch=sm_90 -std=c++17" in user


def test_the_debug_agent_gets_the_mismatch_as_json_and_no_code_is_asked(task, hw):
    mismatch = {"size": {"N": 262144}, "index": 262143, "expected": 1.5, "got": "nan"}
    messages = debug_messages(
        task=task, precision="fp32", hardware=hw, code="x", kind="mismatch", log=mismatch
    )
    system, user = messages[0]["content"], messages[1]["content"]
    assert "vector_add_optimized" in system and "No code blocks" in system
    assert json.dumps(mismatch, indent=2) in user and "first mismatch" in user


@pytest.mark.parametrize(
    "kind,label",
    [
        ("compile", "nvcc compile log"),
        ("runtime", "memcheck"),
        ("rejected", "static check"),
        ("timeout", "timeout"),
        ("something-else", "error report"),
    ],
)
def test_the_debug_agent_is_told_what_kind_of_evidence_it_reads(task, hw, kind, label):
    user = debug_messages(task=task, precision="fp32", hardware=hw, code="x", kind=kind, log="LOG")[1][
        "content"
    ]
    assert label in user and "LOG" in user


def test_long_logs_are_clipped_for_the_debug_agent(task, hw):
    log = "error: first\n" + "noise\n" * 10_000
    user = debug_messages(task=task, precision="fp32", hardware=hw, code="x", kind="compile", log=log)[1][
        "content"
    ]
    assert "error: first" in user and "characters left out" in user and len(user) < 20_000


# -- our own words


PAPER_SENTENCES = (
    "You only need to design optimization schemes, providing only ONE INCREMENTAL IMPROVEMENT STRATEGY at a time",
    "You are a professional CUDA programmer",
    "DO NOT RETAIN ANY ORIGINIAL OPERATORS",
    "You must define ONLY ONE external C function wrapper",
    "The command must be given on a single line without a newline character",
    "You are a CUDA operator testing expert",
    "Do not provide specific code snippets in the optimization plan",
    "However, do not use any existing computing libraries like cuBLAS or cuDNN",
)


def _all_prompt_text(task: TaskSpec, hw: HardwareInfo) -> str:
    built = [
        planner_messages(
            task=task,
            precision="fp32",
            hardware=hw,
            code="x",
            results=sizes(),
            previous_plan="p",
            previous_failure="f",
        ),
        coder_messages(task=task, precision="fp32", hardware=hw, code="x", instructions="y"),
        compiler_messages(hardware=hw, code="x", default_command="nvcc", allowed_flags=ALLOWED),
        *(
            debug_messages(task=task, precision="fp32", hardware=hw, code="x", kind=k, log="l")
            for k in prompts.DEBUG_EVIDENCE
        ),
    ]
    return "\n".join(m["content"] for messages in built for m in messages)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def test_no_prompt_repeats_the_papers_sentences(task, hw):
    ours = " ".join(_words(_all_prompt_text(task, hw)))
    for sentence in PAPER_SENTENCES:
        assert " ".join(_words(sentence)) not in ours


def test_no_prompt_shares_a_seven_word_run_with_the_papers_appendix(task, hw):
    if not PAPER.is_file():
        pytest.skip(f"the paper's text is not at {PAPER} (set KW_REFERENCE_DIR)")
    paper = PAPER.read_text(encoding="utf-8")
    appendix = paper[paper.index("Appendix B Prompts") : paper.index("Appendix C")]

    def runs(text: str) -> set[str]:
        words = _words(text)
        return {" ".join(words[i : i + 7]) for i in range(len(words) - 6)}

    assert runs(_all_prompt_text(task, hw)) & runs(appendix) == set()


# -- end to end: prompts -> client -> scripted server -> extraction


def test_the_demo_script_answers_each_agent_by_its_prompt(task, hw):
    client_args = dict(retry=RetryPolicy(max_attempts=1), timeout_s=10)
    with ScriptedLLM(DEMO) as server:
        client = OpenAIChatClient(server.base_url, "sk-demo", "demo-model", **client_args)
        plan = client.chat(
            planner_messages(
                task=task,
                precision="fp32",
                hardware=hw,
                code=Path(__file__).read_text()[:200],
                results=sizes(),
            )
        )
        code = client.chat(
            coder_messages(task=task, precision="fp32", hardware=hw, code="x", instructions=plan.text)
        )
        extracted = extract_code(code.text, "vector_add", code.finish_reason)
        command = client.chat(
            compiler_messages(
                hardware=hw,
                code=extracted.code or "",
                default_command="nvcc -O3 -arch=sm_90",
                allowed_flags=ALLOWED,
            )
        )
    assert "float4" in plan.text and plan.tokens_in == 1850
    assert extracted.defines_entry
    assert extract_command(command.text).command.startswith("nvcc -O3")
    assert [r.agent for r in server.requests] == ["planner", "coder", "compiler"]
    assert server.remaining == 0
