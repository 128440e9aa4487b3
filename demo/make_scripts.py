"""Write the scripted-LLM demo conversations in demo/scripts/<op>_fp32_demo.json.

Each script plays two rounds with one debug round (R=2, D=1) and exercises all three outcomes the
viewer must show: round 1's first kernel does not compile (a misspelt CUDA call) and the Debug agent
fixes it into the hand-written faster kernel from tests/gpu_candidates/<op>_fast.cu; round 2's kernel
is wrong (it corrupts the first output element) and its fix is still wrong, so the scheme is marked
invalid and the round-1 kernel stays the best.

    .venv/bin/python demo/make_scripts.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPERATORS = {"softmax": "out", "matrix_mul": "C", "dot_product": "loss"}  # op -> output to corrupt

PLANS = {
    "softmax": "Give each row a whole block: stride the max, sum-of-exponentials and normalize passes over "
    "the row so loads coalesce, and reduce with warp shuffles plus one shared-memory step.",
    "matrix_mul": "Tile C into 64x64 blocks staged through shared memory 16 columns of K at a time, and let "
    "each thread accumulate a 4x4 register sub-tile so every shared load feeds several FMAs.",
    "dot_product": "Replace one atomicAdd per element by a bounded grid-stride loop, a warp-shuffle reduction "
    "per block and a single atomicAdd per block.",
}
SECOND_PLAN = "Fuse the final write into the reduction epilogue to save one pass over the output."


def fenced(code: str, prose: str) -> str:
    return f"{prose}\n\n```cuda\n{code.rstrip()}\n```\n"


def broken_compile(code: str) -> str:
    head, sep, tail = code.rpartition("cudaDeviceSynchronize();")
    return head + "cudaDeviceSynchronise();" + tail


def wrong_result(code: str, output: str) -> str:
    corrupt = (
        "__global__ void epilogue_kernel_optimized(float* p) { p[0] += 1.0f; }\n\n"
    )
    head, sep, tail = code.rpartition("cudaDeviceSynchronize();")
    body = head + f"epilogue_kernel_optimized<<<1, 1>>>({output});\n    " + sep + tail
    marker = 'extern "C"'
    i = body.index(marker)
    return body[:i] + corrupt + body[i:]


def step(agent: str, content: str, tokens_in: int, tokens_out: int, note: str) -> dict:
    return {"note": note, "agent": agent, "content": content,
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out}}


def script(op: str, output: str) -> dict:
    fast = (ROOT / "tests" / "gpu_candidates" / f"{op}_fast.cu").read_text()
    command = "nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v"
    wrong = wrong_result(fast, output)
    steps = [
        step("planner", PLANS[op], 2100, 180, "round 1: one incremental scheme"),
        step("coder", fenced(broken_compile(fast), "The scheme applied."), 2600, 1400, "does not compile"),
        step("compiler", command, 1500, 30, "the Compiler agent's command"),
        step("debug", "The wrapper calls `cudaDeviceSynchronise`, which does not exist: the CUDA runtime "
             "spells it `cudaDeviceSynchronize`. Fix the spelling; nothing else is wrong.", 2900, 90,
             "diagnosis from the compile log"),
        step("coder", fenced(fast, "Fixed the synchronization call."), 2700, 1400, "the faster kernel"),
        step("compiler", command, 1500, 30, "same command"),
        step("planner", SECOND_PLAN, 2500, 120, "round 2"),
        step("coder", fenced(wrong, "Epilogue fused."), 2800, 1450, "wrong result"),
        step("compiler", command, 1500, 30, "same command"),
        step("debug", "The first output element is off by exactly 1: the epilogue adds 1.0f. Remove "
             "the extra increment.", 3000, 80, "diagnosis from the mismatch JSON"),
        step("coder", fenced(wrong, "Adjusted the epilogue."), 2800, 1450, "still wrong: the scheme fails"),
        step("compiler", command, 1500, 30, "same command"),
    ]
    return {"models": ["scripted"], "steps": steps}


def main() -> None:
    out = ROOT / "demo" / "scripts"
    out.mkdir(parents=True, exist_ok=True)
    for op, output in OPERATORS.items():
        path = out / f"{op}_fp32_demo.json"
        path.write_text(json.dumps(script(op, output), indent=1) + "\n")
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
