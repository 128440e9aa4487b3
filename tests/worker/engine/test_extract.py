"""Code and command extraction from model answers, including the demo script's answers."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.specs import write_task
from worker.engine.extract import brace_balance, defines_entry, extract_code, extract_command, fenced_blocks
from worker.formats.cuda.flags import check_flags
from worker.formats.cuda.spec import load_spec
from worker.formats.cuda.static_checks import check_source

DEMO = Path(__file__).parents[3] / "demo" / "scripts" / "vector_add_demo.json"

GOOD = """\
#include <cuda_runtime.h>

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) { C[i] = A[i] + B[i]; }
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    vector_add_kernel_optimized<<<(N + 255) / 256, 256>>>(A, B, C, N);
    cudaDeviceSynchronize();
}"""

ORIGINAL = """\
__global__ void vector_add_kernel(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) { C[i] = A[i] + B[i]; }
}"""


def fence(code: str, tag: str = "cuda", mark: str = "```") -> str:
    return f"{mark}{tag}\n{code}\n{mark}"


def test_a_single_cuda_block_with_prose_around_it():
    text = f"Here is the optimized version:\n\n{fence(GOOD)}\n\nThis uses one thread per element."
    result = extract_code(text, "vector_add")
    assert result.ok and result.code == GOOD and result.defines_entry
    assert "block 1 of 1" in result.reason


@pytest.mark.parametrize(
    "tag", ["cuda", "cu", "c++", "cpp", "c", "", "CUDA", "cuda title=kernel.cu", "kernel.cu"]
)
def test_every_common_language_tag_is_accepted(tag):
    assert extract_code(fence(GOOD, tag), "vector_add").code == GOOD


def test_tilde_fences_work_like_backticks():
    assert extract_code(fence(GOOD, "cuda", "~~~"), "vector_add").code == GOOD


def test_a_longer_fence_can_hold_triple_backticks_in_a_comment():
    code = GOOD + "\n// example: ```cuda ... ```\n```"
    text = f"````cuda\n{code}\n````"
    assert extract_code(text, "vector_add").code == code


def test_the_block_defining_the_entry_wins_over_larger_blocks():
    text = (
        f"The original:\n{fence(ORIGINAL * 5)}\nThe optimized file:\n{fence(GOOD)}\n"
        f"Build:\n{fence('nvcc -O3', 'bash')}"
    )
    result = extract_code(text, "vector_add")
    assert result.code == GOOD and "block 2 of 3" in result.reason


def test_when_several_blocks_define_the_entry_the_last_one_wins():
    revised = GOOD.replace("256", "512")
    text = f"First try:\n{fence(GOOD)}\nWait, a bigger block is better:\n{fence(revised)}"
    result = extract_code(text, "vector_add")
    assert result.code == revised and "the last of 2" in result.reason


def test_without_the_entry_the_largest_c_block_is_taken_and_the_reason_says_so():
    partial = ORIGINAL + "\n// more code\n" + ORIGINAL.replace("vector_add_kernel", "other_kernel")
    text = f"{fence(ORIGINAL)}\n{fence(partial, 'cpp')}\n{fence('echo hi', 'bash')}"
    result = extract_code(text, "vector_add")
    assert result.code == partial and not result.defines_entry
    assert 'no block defines extern "C" void vector_add_optimized(' in result.reason


def test_a_declaration_or_a_comment_does_not_count_as_defining_the_entry():
    declared = 'extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N);'
    commented = '// extern "C" void vector_add_optimized(const float* A) { }'
    assert not defines_entry(declared, "vector_add")
    assert not defines_entry(commented, "vector_add")
    assert defines_entry('extern "C" { void vector_add_optimized(int N) { } }', "vector_add")
    assert defines_entry(GOOD, "vector_add_optimized")  # an already suffixed name is kept


def test_no_fence_takes_the_code_and_drops_the_prose():
    text = f"Sure! Below is the code.\n\n{GOOD}\n\nLet me know if you need anything else."
    result = extract_code(text, "vector_add")
    assert result.code == GOOD and result.defines_entry
    assert "no fenced block" in result.reason and "prose" in result.reason


def test_no_fence_and_no_cuda_is_refused():
    result = extract_code("I would use shared memory tiling here.", "vector_add")
    assert result.code is None and "no code block and no CUDA code" in result.reason


def test_an_unclosed_fence_at_max_tokens_is_reported_as_cut_off():
    text = "Here it is:\n```cuda\n" + GOOD[: len(GOOD) // 2]
    result = extract_code(text, "vector_add", finish_reason="length")
    assert result.code is None
    assert result.reason == "the model's answer was cut off (max tokens) inside the code block"


def test_an_unclosed_fence_without_max_tokens_is_still_refused():
    result = extract_code("```cuda\n" + GOOD, "vector_add", finish_reason="stop")
    assert result.code is None and "never closed" in result.reason


def test_unbalanced_braces_are_refused_as_truncated():
    result = extract_code(fence(GOOD[:-2]), "vector_add")
    assert result.code is None and "unbalanced" in result.reason and "truncated" in result.reason


def test_braces_in_comments_and_strings_do_not_count():
    code = GOOD + "\n// a stray } in a comment\n/* and { here */\nconst char* s = \"}}\"; char c = '{';"
    assert brace_balance(code) == 0
    assert extract_code(fence(code), "vector_add").code == code


def test_max_tokens_after_a_complete_block_keeps_the_code():
    text = f"{fence(GOOD)}\n\nThis kernel improves coalescing because each thre"
    result = extract_code(text, "vector_add", finish_reason="length")
    assert result.code == GOOD and "max tokens after the code block" in result.reason


def test_a_later_block_cut_off_makes_the_answer_invalid():
    text = f"{fence(GOOD)}\nAn even faster version:\n```cuda\n__global__ void vector_add_kernel_optimized("
    result = extract_code(text, "vector_add", finish_reason="length")
    assert result.code is None and "cut off" in result.reason


def test_unfenced_code_cut_off_at_max_tokens_is_refused():
    result = extract_code(GOOD[:200], "vector_add", finish_reason="length")
    assert result.code is None and "cut off" in result.reason


def test_empty_answers_and_empty_blocks_have_reasons():
    assert extract_code("", "vector_add").reason == "the model's answer was empty"
    assert extract_code(None, "vector_add").code is None
    assert extract_code("```cuda\n```", "vector_add").reason == "the code block is empty"


def test_only_non_c_blocks_are_refused_and_named():
    result = extract_code(f"{fence('nvcc -O3 x.cu', 'bash')}\n{fence('print(1)', 'python')}", "vector_add")
    assert result.code is None and "bash, python" in result.reason


def test_reasoning_in_think_tags_is_ignored():
    draft = GOOD.replace("256", "64")
    text = f"<think>Maybe:\n{fence(draft)}\nNo, keep 256.</think>\nFinal:\n{fence(GOOD)}"
    assert extract_code(text, "vector_add").code == GOOD


def test_crlf_line_endings_and_indented_fences_are_handled():
    indented = (
        "1. The file:\n\n   ```cuda\n" + "\n".join("   " + line for line in GOOD.split("\n")) + "\n   ```\n"
    )
    assert extract_code(indented.replace("\n", "\r\n"), "vector_add").code == GOOD


def test_fenced_blocks_reports_tags_and_closure():
    blocks = fenced_blocks("a\n```CUDA\nx\n```\n~~~\ny\n")
    assert [(b.lang, b.code, b.closed, b.number) for b in blocks] == [
        ("cuda", "x", True, 1),
        ("", "y", False, 2),
    ]


# -- nvcc commands (Compiler agent)


@pytest.mark.parametrize(
    "text",
    [
        "nvcc -O3 -arch=sm_90 kernel.cu -o kernel",
        "Use this command:\n```bash\nnvcc -O3 -arch=sm_90 kernel.cu -o kernel\n```\nIt enables O3.",
        "```\n$ nvcc -O3 -arch=sm_90 kernel.cu -o kernel\n```",
        "The command is\n\n`nvcc -O3 -arch=sm_90 kernel.cu -o kernel`",
        "Compile it with `nvcc -O3 -arch=sm_90 kernel.cu -o kernel` on the target.",
        "```sh\nnvcc -O3 \\\n  -arch=sm_90 \\\n  kernel.cu -o kernel\n```",
    ],
)
def test_the_nvcc_command_is_found_in_prose_fences_and_spans(text):
    result = extract_command(text)
    assert result.command == "nvcc -O3 -arch=sm_90 kernel.cu -o kernel", result.reason


def test_a_command_in_a_block_wins_over_prose_that_starts_with_nvcc():
    text = "nvcc is NVIDIA's compiler.\n```bash\nnvcc -O2 kernel.cu\n```"
    assert extract_command(text).command == "nvcc -O2 kernel.cu"


def test_a_full_path_to_nvcc_is_kept():
    assert extract_command("/usr/local/cuda/bin/nvcc -O3 k.cu").command == "/usr/local/cuda/bin/nvcc -O3 k.cu"


def test_shell_chains_after_the_command_are_dropped_with_a_note():
    result = extract_command("nvcc -O3 k.cu -o k && ./k")
    assert result.command == "nvcc -O3 k.cu -o k" and "shell operator" in result.reason


def test_no_command_gives_a_reason():
    result = extract_command("I recommend -O3 and fast math.")
    assert result.command is None and "no nvcc command" in result.reason
    assert extract_command("").reason == "the model's answer was empty"


# -- the demo script stays a valid conversation


def _demo_answer(agent: str) -> str:
    steps = json.loads(DEMO.read_text())["steps"]
    step = next(s for s in steps if s.get("agent") == agent)
    return "\n".join(step["content_lines"]) if "content_lines" in step else step["content"]


@pytest.fixture(scope="module")
def demo_code() -> str:
    result = extract_code(_demo_answer("coder"), "vector_add")
    assert result.ok and result.defines_entry, result.reason
    return result.code


def test_the_demo_coder_answer_passes_the_static_checks(demo_code, tmp_path):
    spec = load_spec(write_task(tmp_path, "vector_add") / "spec.toml")
    report = check_source(demo_code, spec, "fp32", baseline_kernels=("add_kernel",))
    assert not report.violations, [str(v) for v in report.violations]
    assert "float4" in demo_code and "gridDim.x" in demo_code


def test_the_demo_compiler_answer_passes_the_flag_whitelist():
    command = extract_command(_demo_answer("compiler"))
    assert command.ok
    checked = check_flags(command.command, "sm_90")
    assert checked.ok, checked.reason


def test_the_demo_planner_answer_has_no_code():
    assert fenced_blocks(_demo_answer("planner")) == []


def test_the_demo_coder_answer_compiles(demo_code, tmp_path):
    nvcc = shutil.which("nvcc")
    if not nvcc:
        pytest.skip("nvcc not found")
    source = tmp_path / "vector_add_optimized.cu"
    source.write_text(demo_code)
    proc = subprocess.run(
        [nvcc, "-O3", "-arch=sm_90", "-std=c++17", "-c", str(source), "-o", str(tmp_path / "c.o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
