"""Write the scripted-LLM demo conversations for the two other task formats (demo/scripts/):

- `scale_bias_leaky_relu_fp32_demo.json`: the KernelBench-format task of tasks/kernelbench-examples;
- `vector_add_make_demo.json`: the task.yaml task of tasks/cudahercules-examples.

Both play R=2 rounds with one debug round, like the C/CUDA demos (demo/make_scripts.py), and show the
three outcomes the viewer must: round 1's first file does not build (the real compiler's error reaches the
Debug agent), its fix is the faster candidate of this folder; round 2's file is wrong and its fix still
wrong, so the scheme fails and round 1 stays the best. There is no Compiler agent for these formats: the
build is the task's own (load_inline, or the task's make command).

    .venv/bin/python demo/formats/make_scripts.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE.parent / "scripts"


def step(agent: str, content: str, tokens_in: int, tokens_out: int, note: str) -> dict:
    return {"note": note, "agent": agent, "content": content,
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out}}


def fenced(code: str, prose: str, lang: str) -> str:
    return f"{prose}\n\n```{lang}\n{code.rstrip()}\n```\n"


def kernelbench_script() -> dict:
    fused = (HERE / "scale_bias_leaky_relu_fused.py").read_text(encoding="utf-8")
    # A real build error: the stream header left out, so c10::cuda is unknown to nvcc.
    no_header = fused.replace("#include <c10/cuda/CUDAStream.h>\n", "")
    # A real wrong result: every element takes the bias of its row instead of its column.
    wrong = fused.replace("load_f(bias, i % features)", "load_f(bias, (i / features) % features)")
    # The "fix" moves the same mistake into a helper: still wrong.
    still_wrong = wrong.replace("(i / features) % features", "(long)(i / features) % features")
    assert no_header != fused and wrong != fused and still_wrong != wrong
    steps = [
        step("planner", "Eager PyTorch runs three element-wise kernels (multiply, add, LeakyReLU) and moves the "
             "whole tensor through DRAM three times. Fuse them into one grid-stride kernel that reads x and the "
             "bias once and writes y once, doing the math in float.", 2300, 160, "round 1: fusion"),
        step("coder", fenced(no_header, "The three passes fused into one kernel.", "python"), 2900, 1300,
             "does not build"),
        step("debug", "The build fails in the CUDA source: `c10::cuda::getCurrentCUDAStream` is used but its "
             "header is not included. Add `#include <c10/cuda/CUDAStream.h>` to cuda_source; nothing else is "
             "wrong.", 3100, 90, "diagnosis from the build log"),
        step("coder", fenced(fused, "Added the missing include.", "python"), 3000, 1300, "the fused kernel"),
        step("planner", "The fused kernel is bandwidth-bound. Precompute the bias index once per row block so "
             "the modulo leaves the inner loop.", 2700, 120, "round 2"),
        step("coder", fenced(wrong, "Bias index hoisted.", "python"), 3000, 1320, "wrong result"),
        step("debug", "The outputs differ from the reference for every row but the first: the bias index uses "
             "the row number. Index the bias by the column, `i % features`.", 3200, 80,
             "diagnosis from the first mismatch"),
        step("coder", fenced(still_wrong, "Adjusted the bias index.", "python"), 3000, 1320,
             "still wrong: the scheme fails"),
    ]
    return {"models": ["scripted"], "steps": steps}


def make_script() -> dict:
    fast = (HERE / "vector_add_make_fast.cu").read_text(encoding="utf-8")
    typo = fast.replace("blockIdx.x * blockDim.x + threadIdx.x", "blockIdx.x * blockDim.x + threadIdx.X", 1)
    # The harness's sizes are 2^20, 2^22 and 2^24 + 3: a tail of 3 that both of these skip.
    wrong = fast.replace("if (n % 4) vector_add_tail_kernel", "if (n % 4 == 1) vector_add_tail_kernel")
    still_wrong = wrong.replace("n % 4 == 1", "n % 4 < 3")
    assert typo != fast and wrong != fast and still_wrong != wrong
    steps = [
        step("planner", "The naive solution runs one block of 256 threads, so one SM does all the work. Launch "
             "a full grid and move four floats per thread with float4 loads and stores, with a scalar tail.",
             2000, 150, "round 1"),
        step("coder", fenced(typo, "A full grid with float4 accesses.", "cuda"), 2400, 700, "does not build"),
        step("debug", "nvcc reports that `threadIdx.X` has no member X: the component is lower-case, "
             "`threadIdx.x`. Fix that one expression.", 2700, 70, "diagnosis from make's output"),
        step("coder", fenced(fast, "Fixed the thread index.", "cuda"), 2500, 700, "the faster solution"),
        step("planner", "Launch the tail only when needed: skip the tail kernel when n is a multiple of 4.",
             2300, 90, "round 2"),
        step("coder", fenced(wrong, "The tail launch made conditional.", "cuda"), 2500, 700,
             "wrong result: the tail of n = 2^24 + 3 is skipped"),
        step("debug", "The harness reports a mismatch in the last elements of the n = 2^24 + 3 case: the "
             "condition skips the tail when three elements remain. Launch it whenever n % 4 != 0.", 2800, 80,
             "diagnosis from the harness output"),
        step("coder", fenced(still_wrong, "Adjusted the condition.", "cuda"), 2500, 700,
             "still wrong: the scheme fails"),
    ]
    return {"models": ["scripted"], "steps": steps}


def main() -> None:
    for name, script in (("scale_bias_leaky_relu_fp32_demo.json", kernelbench_script()),
                         ("vector_add_make_demo.json", make_script())):
        path = SCRIPTS / name
        path.write_text(json.dumps(script, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(HERE.parents[1])} ({len(script['steps'])} steps)")


if __name__ == "__main__":
    main()
