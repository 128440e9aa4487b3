"""Write demo/experiment/script.json: the scripted LLM's side of the 12-task demo experiment.

Six MSKernelBench operators in FP32 and BF16, one run each with R=1 and D=1. Every answer of the
scripted Planner, Coder, Compiler and Debug agents is built here from kernel files of
tests/gpu_candidates/ (the one set of hand-written candidates, which the GPU tests evaluate too), so a
reader sees where each answer comes from:

- `<op>_fast.cu` (FP32) and `<op>_bf16_fast.cu`: the candidate the run ends with;
- a first attempt that fails for real, fixed in the debug round: vector_add BF16 does not compile
  (`vector_add_bf16_bad_conversion.cu`, a real nvcc error: `__float22bfloat162_rn` takes one float2) and
  prefix_sum FP32 is wrong (`prefix_sum_exclusive_scan.cu`: the per-thread scan stores its running sum
  before adding the element, an exclusive scan); their Debug agent's diagnosis leads to the file above;
- dot_product BF16 never gets a valid kernel: attempt 1 (`dot_product_bf16_hfma2_accumulate.cu`)
  accumulates with packed `__hfma2` in a `__nv_bfloat162` register, and the "fix"
  (`dot_product_bf16_rounded_products.cu`) accumulates in float but still rounds every product to bf16
  with `__hmul2`. Both are out of tolerance (simulated in bf16 arithmetic: the error exceeds atol 0.1 at
  most sizes), so the run keeps the baseline and the analyses count a failure.

The kernels' text goes into the script verbatim, so editing one of these files changes the recorded
conversation: tests/worker/agents/test_experiment_script.py fails until script.json is regenerated, and the
recorded experiment in demo/experiments/ no longer matches it.

Each step is matched by the text only its own task's prompts contain: the user prompt of the Planner,
Coder and Debug agents names the entry point and the precision ("(`vector_add_bf16`, BF16)"), the Compiler
agent's carries the candidate, which defines `void <entry>_optimized(`. Steps of one task are used in
order, so the first Coder answer is the first attempt and the second one the fix. Token counts are those
of the real prompts (worker/agents/prompts.py, for an H100) at 4 characters a token, plus what the engine adds
at run time (results and profile for the Planner, the log for the Debug agent).

The top-level "tasks" list says what each run is expected to do; tests/worker/agents/test_experiment_script.py
plays the script through the real pipeline with it, and bench/experiment_fullstack.py compares the
measured experiment with it.

    .venv/bin/python demo/experiment/make_script.py           # rewrite script.json
    .venv/bin/python demo/experiment/make_script.py --check   # exit 1 if script.json is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:  # run as a script: make `worker` importable
    sys.path.insert(0, str(ROOT))

from worker.agents import prompts  # noqa: E402
from worker.engine.results import SizeResult  # noqa: E402
from worker.formats.cuda.flags import ALLOWED_FLAGS_TEXT  # noqa: E402
from worker.formats.cuda.spec import TaskSpec, load_spec  # noqa: E402

KERNELS = ROOT / "tests" / "gpu_candidates"  # the hand-written candidates, shared with the GPU tests
SCRIPT = HERE / "script.json"
TASKS_DIR = ROOT / "tasks" / "mskernelbench"
MODEL = "scripted"
COMMAND = "nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v"
COMMAND_LINEINFO = "nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v"
DEFAULT_COMMAND = "nvcc -O3 -arch=sm_90 -std=c++17"  # worker.formats.cuda.flags.default_flags("sm_90")
# Tokens the engine adds to a prompt at run time that this generator cannot know in advance.
PLANNER_EXTRA = 420  # five size blocks of results and the filtered profile of five sizes
DEBUG_EXTRA = {"compile": 160, "mismatch": 90}
H100 = prompts.HardwareInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", memory_mib=81559,
                            **prompts.known_specs("NVIDIA H100 80GB HBM3"))

PLANS = {
    "vector_add": (
        "The kernel is memory-bandwidth bound: one 2- or 4-byte load per operand per thread and a grid "
        "of N/256 blocks. Move 16 bytes per load and store instead ({vector}), walk the vectors with a "
        "grid-stride loop over a grid capped at 2048 blocks of 256 threads, and keep a scalar path for "
        "the N % {width} tail and for pointers that are not 16-byte aligned. {numerics} Expect fewer "
        "memory instructions; at these sizes launch overhead limits the gain."
    ),
    "RELU": (
        "Memory-bandwidth bound with one scalar load and store per element. Vectorize: 16-byte loads "
        "and stores ({vector}) in a grid-stride loop over at most 2048 blocks of 256 threads, a scalar "
        "tail for N % {width}, and a scalar kernel when a pointer is not 16-byte aligned. Keep the "
        "comparison x > 0 ? x : 0 so the output stays bit-identical. {numerics}"
    ),
    "dot_product": (
        "Every element issues an atomicAdd on the same address, so the atomics serialize (compute "
        "throughput is low, the L2 atomic unit is the limit). Give each thread many elements through a "
        "grid-stride loop over a bounded grid, reduce each block with warp shuffles and one "
        "shared-memory step, and issue one atomicAdd per block. {numerics}"
    ),
    "rms_norm": (
        "Every thread recomputes the whole sum of squares, an O(N^2) loop that is latency bound. Let one "
        "block of 256 threads compute the sum of squares once (strided loads, warp-shuffle reduction "
        "and one shared-memory step), keep RMS + epsilon in shared memory, then normalize the vector "
        "with the same threads. N is at most 1024, so one block is enough. {numerics}"
    ),
    "matrix_transpose": (
        "Reads are coalesced but the writes are strided by M: each warp store touches 32 different "
        "rows, so DRAM traffic is several times the data size. Stage a tile through shared memory so "
        "both the read of A and the write of B are coalesced, pad the tile against bank conflicts, and "
        "let each thread move several elements. {numerics}"
    ),
    "prefix_sum": (
        "The original is O(N^2): thread i sums i+1 elements, so the largest size does 3.4e10 additions. "
        "Replace it by an O(N) scan: tiles of 1024 elements (256 threads x 4) scanned with a sequential "
        "pass in registers and warp-shuffle scans across threads and warps, a single-block scan of the "
        "tile totals into offsets, and the offsets added per tile. {numerics}"
    ),
}
NUMERICS = {
    ("vector_add", "fp32"): "Nothing changes numerically.",
    ("vector_add", "bf16"): "Convert pairs with the bf16x2 intrinsics, add in float and round once.",
    ("RELU", "fp32"): "",
    ("RELU", "bf16"): "Unpack pairs of bf16 to float2 and back.",
    ("dot_product", "fp32"): "Use FMA into a float register; the order change stays far inside atol 0.1.",
    ("dot_product", "bf16"): "Load 16 bytes (8 bf16) at a time and use the packed bf16x2 FMA, two products "
                             "per instruction, capping the grid at 2 blocks per SM.",
    ("rms_norm", "fp32"): "Keep epsilon added to the RMS, not under the root.",
    ("rms_norm", "bf16"): "Compute in float as the original does and round each output once to bf16.",
    ("matrix_transpose", "fp32"): "A 32x33 float tile, blocks of 32x8 threads moving 4 elements each.",
    ("matrix_transpose", "bf16"): "A 64x66 bf16 tile with 32x8 threads, each global access a bf16 pair so "
                                  "a warp moves 128 contiguous bytes; a 32x33 element tile for other shapes.",
    ("prefix_sum", "fp32"): "Keep the tile totals in a scratch buffer reused across calls.",
    ("prefix_sum", "bf16"): "Keep every sum in float and round each output to bf16 exactly once: compute "
                            "the tile offsets first (reduce, scan the totals), then scan each tile again "
                            "with its offset, since rounding a tile-local prefix before adding the offset "
                            "would round twice.",
}
VECTOR = {"fp32": ("float4", 4), "bf16": ("8 bf16 as a uint4 of bf16x2 pairs", 8)}

DIAGNOSES = {
    ("vector_add", "bf16"): (
        "compile",
        "The file fails at the packed conversion in vector_add_bf16_vec8_kernel_optimized: "
        "`__float22bfloat162_rn` takes one float2 argument, and it is called with two floats (hence "
        "\"too many arguments\" and \"no suitable constructor ... from float to float2\"). Call "
        "`__floats2bfloat162_rn(fa.x + fb.x, fa.y + fb.y)`, the variant that takes two floats and rounds "
        "each to nearest even; nothing else needs to change.",
    ),
    ("prefix_sum", "fp32"): (
        "mismatch",
        "Every output misses its own input element: output[i] comes out as input[0] + ... + input[i-1], "
        "an exclusive scan (at index 0 it is 0 instead of input[0]), and the error is the size of one "
        "input value, not an accumulation error. In prefix_sum_tile_kernel_optimized the per-thread loop stores "
        "`v[j] = run` before `run += input[i]`, which makes the thread-local scan exclusive while the "
        "warp and block steps assume an inclusive one. Swap the two statements so that the element is "
        "added first; the tile totals are already right.",
    ),
    ("dot_product", "bf16"): (
        "mismatch",
        "The result is off by far more than the float accumulation error: the per-thread accumulator "
        "`acc` is a __nv_bfloat162, so every __hfma2 rounds the running sum to bf16 (8 significant "
        "bits) and the partial sums lose about three digits. Accumulate in float: keep the 16-byte "
        "loads, but sum the products of each bf16x2 pair into a float register and drop the bf16x2 "
        "accumulator; the block reduction is already in float.",
    ),
}


@dataclass(frozen=True)
class Scenario:
    op: str
    precision: str
    expect: str  # "ok": the first candidate is valid; "fixed": attempt 1 fails, the debug fix is valid;
    # "fails": both candidates fail, the run keeps the baseline
    first_failure: str = ""  # the verdict of attempt 1 when it fails

    attempts: tuple[str, ...] = ()  # the failing candidates before the final one, file names in KERNELS

    @property
    def final_file(self) -> Path:
        """The candidate the run ends with: the valid one, or the last failing attempt."""
        if self.expect == "fails":
            return KERNELS / self.attempts[-1]
        return KERNELS / (f"{self.op}_fast.cu" if self.precision == "fp32" else f"{self.op}_{self.precision}_fast.cu")

    @property
    def first_file(self) -> Path:
        return KERNELS / self.attempts[0] if self.attempts else self.final_file

    @property
    def command(self) -> str:
        return COMMAND_LINEINFO if self.op in ("dot_product", "rms_norm", "prefix_sum") else COMMAND


SCENARIOS = (
    Scenario("vector_add", "fp32", "ok"),
    Scenario("vector_add", "bf16", "fixed", "compile_error", ("vector_add_bf16_bad_conversion.cu",)),
    Scenario("RELU", "fp32", "ok"),
    Scenario("RELU", "bf16", "ok"),
    Scenario("dot_product", "fp32", "ok"),
    Scenario("dot_product", "bf16", "fails", "incorrect",
             ("dot_product_bf16_hfma2_accumulate.cu", "dot_product_bf16_rounded_products.cu")),
    Scenario("rms_norm", "fp32", "ok"),
    Scenario("rms_norm", "bf16", "ok"),
    Scenario("matrix_transpose", "fp32", "ok"),
    Scenario("matrix_transpose", "bf16", "ok"),
    Scenario("prefix_sum", "fp32", "fixed", "incorrect", ("prefix_sum_exclusive_scan.cu",)),
    Scenario("prefix_sum", "bf16", "ok"),
)


def spec_of(op: str) -> TaskSpec:
    return load_spec(TASKS_DIR / op / "spec.toml")


def task_marker(spec: TaskSpec, precision: str) -> str:
    """Text that only this task's Planner, Coder and Debug prompts contain (worker.agents.prompts.describe_task)."""
    return f"(`{spec.interfaces[precision].entry}`, {precision.upper()})"


def code_marker(spec: TaskSpec, precision: str) -> str:
    """Text that only this task's candidates contain: the start of the wrapper's definition."""
    return f"void {spec.interfaces[precision].optimized_entry}("


def tokens(messages: list[dict[str, str]], extra: int = 0) -> int:
    return sum(len(m["content"]) for m in messages) // 4 + extra


def fenced(prose: str, code: str) -> str:
    return f"{prose}\n\n```cuda\n{code.rstrip()}\n```\n"


def step(note: str, agent: str, marker: str, content: str, prompt_tokens: int, completion_tokens: int) -> dict:
    return {"note": note, "agent": agent, "match": {"user_contains": marker}, "content": content,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}}


def plan_text(s: Scenario) -> str:
    vector, width = VECTOR[s.precision]
    text = PLANS[s.op].format(vector=vector, width=width, numerics=NUMERICS[(s.op, s.precision)])
    return " ".join(text.split())


def task_steps(s: Scenario) -> list[dict]:
    spec = spec_of(s.op)
    task, code_at = task_marker(spec, s.precision), code_marker(spec, s.precision)
    baseline = spec.baseline_source(s.precision).read_text(encoding="utf-8")
    results = [SizeResult(i, dict(size), spec.complexity_of(size), speedup=1.0) for i, size in enumerate(spec.sizes)]
    plan = plan_text(s)
    planner = prompts.planner_messages(task=spec, precision=s.precision, hardware=H100, code=baseline,
                                       results=results)
    first = s.first_file.read_text(encoding="utf-8")
    first_answer = fenced("The plan, implemented in one file.", first)
    coder = prompts.coder_messages(task=spec, precision=s.precision, hardware=H100, code=baseline,
                                   instructions=plan)
    compiler = prompts.compiler_messages(hardware=H100, code=first, default_command=DEFAULT_COMMAND,
                                         allowed_flags=ALLOWED_FLAGS_TEXT)
    name = f"{s.op} {s.precision.upper()}"
    steps = [
        step(f"{name}: round 1 plan", "planner", task, plan, tokens(planner, PLANNER_EXTRA), len(plan) // 4 + 40),
        step(f"{name}: attempt 1" + (f" ({s.first_failure})" if s.first_failure else ""), "coder", task,
             first_answer, tokens(coder), len(first_answer) // 3),
        step(f"{name}: compile options", "compiler", code_at, s.command, tokens(compiler), 24),
    ]
    if s.expect == "ok":
        return steps
    kind, diagnosis = DIAGNOSES[(s.op, s.precision)]
    debug = prompts.debug_messages(task=spec, precision=s.precision, hardware=H100, code=first, kind=kind, log="")
    final = s.final_file.read_text(encoding="utf-8")
    fix_answer = fenced("The fix, applied to the whole file.", final)
    fixer = prompts.coder_messages(task=spec, precision=s.precision, hardware=H100, code=first,
                                   instructions=diagnosis, fix=True)
    compiler = prompts.compiler_messages(hardware=H100, code=final, default_command=DEFAULT_COMMAND,
                                         allowed_flags=ALLOWED_FLAGS_TEXT)
    outcome = "still incorrect" if s.expect == "fails" else "valid"
    steps += [
        step(f"{name}: diagnosis from the {'compile log' if kind == 'compile' else 'first mismatch'}", "debug",
             task, diagnosis, tokens(debug, DEBUG_EXTRA[kind]), len(diagnosis) // 4 + 60),
        step(f"{name}: the fix ({outcome})", "coder", task, fix_answer, tokens(fixer), len(fix_answer) // 3),
        step(f"{name}: compile options", "compiler", code_at, s.command, tokens(compiler), 24),
    ]
    return steps


def expectation(s: Scenario) -> dict:
    """What the run should do, for the test and the bench (not read by the scripted server)."""
    spec = spec_of(s.op)
    turns = {"ok": ["ok"], "fixed": [s.first_failure, "ok"], "fails": [s.first_failure, s.first_failure]}[s.expect]
    files = [s.first_file] + ([s.final_file] if s.expect != "ok" else [])
    candidates = [str(f.relative_to(ROOT)) for f in files]
    return {"operator": s.op, "precision": s.precision, "entry": spec.interfaces[s.precision].entry,
            "expect": s.expect, "verdicts": turns, "candidates": candidates, "command": s.command,
            "correct": s.expect != "fails"}


def build() -> dict:
    steps = [st for s in SCENARIOS for st in task_steps(s)]
    return {
        "note": "Generated by demo/experiment/make_script.py from kernels in tests/gpu_candidates/; do not edit.",
        "models": [MODEL],
        "tasks": [expectation(s) for s in SCENARIOS],
        "steps": steps,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check that script.json is up to date")
    args = parser.parse_args(argv)
    text = json.dumps(build(), indent=1) + "\n"
    if args.check:
        current = SCRIPT.read_text(encoding="utf-8") if SCRIPT.is_file() else ""
        if current != text:
            print(f"{SCRIPT.relative_to(ROOT)} is stale: run demo/experiment/make_script.py", file=sys.stderr)
            return 1
        return 0
    SCRIPT.write_text(text, encoding="utf-8")
    print(f"wrote {SCRIPT.relative_to(ROOT)}: {len(json.loads(text)['steps'])} steps for {len(SCENARIOS)} tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
