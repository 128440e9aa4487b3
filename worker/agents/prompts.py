"""The four agents' prompts (Planner, Coder, Compiler, Debug), after the roles and rules of the
CUDAMaster paper (Appendix B), in our own words.

Each builder returns chat messages, `[{"role": "system", ...}, {"role": "user", ...}]`. The system
prompt holds the role, the GPU and the rules; the user prompt holds this turn's material. Every
system prompt opens with a "# <Name> agent" heading: the scripted test server tells agents apart by it.
Results reach the Planner in the paper's layout (one block per size, blocks split by "=====").
What differs between task formats (the task's description, the library rule, the Coder's rules, the
Debug agent's frame) comes from the format's `prompts` (worker/formats/<name>/prompts.py) via the registry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from string import Template
from typing import Any, Protocol

from worker import registry
from worker.agents.budget import PromptLimits
from worker.engine.gpu import GpuInfo
from worker.engine.prompttext import KIB, MIB, clip, code_block, format_size, num
from worker.registry import AnySpec

Messages = list[dict[str, str]]
FULL = PromptLimits()  # no trimming beyond the usual clip of long logs and sources
SEPARATOR = "====="


# ---------------------------------------------------------------------------------------------- hardware


@dataclass(frozen=True)
class HardwareInfo:
    """What the agents are told about the GPU. Unknown values are left out of the prompt."""

    name: str
    compute_capability: str = ""  # "9.0"
    sm_count: int | None = None
    memory_bandwidth_gbs: float | None = None  # peak DRAM bandwidth
    l2_cache_bytes: int | None = None
    shared_mem_per_block_bytes: int | None = 48 * KIB  # without opt-in (the static limit)
    shared_mem_per_block_optin_bytes: int | None = None  # with cudaFuncSetAttribute opt-in
    registers_per_sm: int | None = None
    memory_mib: int | None = None
    warp_size: int = 32

    @property
    def arch(self) -> str:
        return "sm_" + self.compute_capability.replace(".", "") if self.compute_capability else ""

    @classmethod
    def from_gpu(cls, gpu: GpuInfo, **probed: Any) -> HardwareInfo:
        """From nvidia-smi's view of the GPU, completed from KNOWN_GPUS; `probed` values (e.g. from a
        cudaGetDeviceProperties probe) win over both."""
        fields: dict[str, Any] = dict(known_specs(gpu.name))
        fields.update(
            name=gpu.name, compute_capability=gpu.compute_capability, memory_mib=gpu.memory_mib or None
        )
        fields.update({k: v for k, v in probed.items() if v is not None})
        return cls(**fields)

    def describe(self) -> str:
        lines = [f"- GPU: {self.name}"]
        if self.compute_capability:
            lines[0] += f", compute capability {self.compute_capability} ({self.arch})"
        if self.sm_count:
            lines.append(f"- Streaming multiprocessors (SMs): {self.sm_count}")
        if self.memory_bandwidth_gbs:
            lines.append(f"- Peak memory bandwidth: {num(self.memory_bandwidth_gbs)} GB/s")
        if self.memory_mib:
            lines.append(f"- Device memory: {self.memory_mib} MiB")
        if self.l2_cache_bytes:
            lines.append(f"- L2 cache: {_bytes(self.l2_cache_bytes)}")
        if self.shared_mem_per_block_bytes:
            smem = f"- Shared memory per block: {_bytes(self.shared_mem_per_block_bytes)}"
            if self.shared_mem_per_block_optin_bytes:
                smem += f" by default, up to {_bytes(self.shared_mem_per_block_optin_bytes)} with opt-in"
                smem += " (cudaFuncSetAttribute, cudaFuncAttributeMaxDynamicSharedMemorySize)"
            lines.append(smem)
        if self.registers_per_sm:
            lines.append(f"- 32-bit registers per SM: {self.registers_per_sm}")
        lines.append(f"- Warp size: {self.warp_size}")
        return "\n".join(lines)


# Data-sheet values for common GPUs, matched by a substring of nvidia-smi's name, most specific first.
KNOWN_GPUS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("H200", dict(sm_count=132, memory_bandwidth_gbs=4800, l2_cache_bytes=50 * MIB,
                  shared_mem_per_block_optin_bytes=227 * KIB, registers_per_sm=65536)),
    ("H100 PCIe", dict(sm_count=114, memory_bandwidth_gbs=2039, l2_cache_bytes=50 * MIB,
                       shared_mem_per_block_optin_bytes=227 * KIB, registers_per_sm=65536)),
    ("H100", dict(sm_count=132, memory_bandwidth_gbs=3352, l2_cache_bytes=50 * MIB,
                  shared_mem_per_block_optin_bytes=227 * KIB, registers_per_sm=65536)),
    ("A100-SXM4-80GB", dict(sm_count=108, memory_bandwidth_gbs=2039, l2_cache_bytes=40 * MIB,
                            shared_mem_per_block_optin_bytes=163 * KIB, registers_per_sm=65536)),
    ("A100", dict(sm_count=108, memory_bandwidth_gbs=1555, l2_cache_bytes=40 * MIB,
                  shared_mem_per_block_optin_bytes=163 * KIB, registers_per_sm=65536)),
    ("RTX 4090", dict(sm_count=128, memory_bandwidth_gbs=1008, l2_cache_bytes=72 * MIB,
                      shared_mem_per_block_optin_bytes=99 * KIB, registers_per_sm=65536)),
    ("L40S", dict(sm_count=142, memory_bandwidth_gbs=864, l2_cache_bytes=96 * MIB,
                  shared_mem_per_block_optin_bytes=99 * KIB, registers_per_sm=65536)),
    ("L4", dict(sm_count=58, memory_bandwidth_gbs=300, l2_cache_bytes=48 * MIB,
                shared_mem_per_block_optin_bytes=99 * KIB, registers_per_sm=65536)),
)


def known_specs(gpu_name: str) -> dict[str, Any]:
    for pattern, specs in KNOWN_GPUS:
        if pattern.lower() in gpu_name.lower():
            return dict(specs)
    return {}


# ---------------------------------------------------------------------------------------------- formatting


class SizeLike(Protocol):
    """One size's result; worker.engine.results.SizeResult fits."""

    params: dict[str, float]
    complexity: float
    speedup: float | None


class ProfileLike(Protocol):
    """One size's filtered profile; worker.engine.results.Profile fits."""

    params: dict[str, float]
    kernel: str
    bottleneck: str
    metrics: dict[str, dict[str, Any]]


def _bytes(n: int) -> str:
    if n % MIB == 0:
        return f"{n // MIB} MiB"
    if n % KIB == 0:
        return f"{n // KIB} KiB"
    return f"{n} bytes"


def format_results(sizes: Sequence[SizeLike]) -> str:
    """Per size: `Test case size: N: 1024, K: 4096. Complexity: 4194304` then `Speedup ratio: 1.73`,
    blocks separated by a line `=====`."""
    blocks = []
    for size in sizes:
        speedup = "not measured" if size.speedup is None else f"{size.speedup:.2f}"
        blocks.append(
            f"Test case size: {format_size(size.params)}. Complexity: {num(size.complexity)}\n"
            f"Speedup ratio: {speedup}"
        )
    return f"\n{SEPARATOR}\n".join(blocks)


def format_metrics(metrics: Mapping[str, Any]) -> str:
    """Filtered Nsight Compute metrics (name -> {"value", "unit"}, (value, unit) or a number),
    one `- name: value unit` line each."""
    lines = []
    for name, entry in metrics.items():
        if isinstance(entry, Mapping):
            value, unit = entry.get("value"), str(entry.get("unit") or "")
        elif isinstance(entry, (tuple, list)) and len(entry) == 2:
            value, unit = entry[0], str(entry[1] or "")
        else:
            value, unit = entry, ""
        shown = num(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
        lines.append(f"- {name}: {shown}{' ' + unit if unit else ''}")
    return "\n".join(lines)


def format_profiles(profiles: Sequence[ProfileLike], *, metrics: bool = True) -> str:
    """Per size: its header, kernel and bottleneck class, then its filtered metrics (unless `metrics` is
    False: the context budget's shorter form); split by `=====`."""
    blocks = []
    for p in profiles:
        bottleneck = str(p.bottleneck).replace("_", " ")
        head = f"Test case size: {format_size(p.params)}. Kernel: {p.kernel}. Bottleneck: {bottleneck}"
        body = format_metrics(p.metrics) if metrics else ""
        blocks.append(f"{head}\n{body}" if body else head)
    return f"\n{SEPARATOR}\n".join(blocks)


def describe_task(task: AnySpec, precision: str, limit: int | None = None) -> str:
    """The task as every agent reads it, in its format's words (title, what to compute, sizes, tolerance)."""
    text = registry.format_of(task).prompts.describe(task, precision)
    return text if limit is None else clip(text, limit)


def _clip(text: str, limit: int | None) -> str:
    return text if limit is None else clip(text, limit)


def code_language(task: AnySpec) -> str:
    """The fence tag of the task's code (and the viewer's lexer)."""
    return registry.format_of(task).language


def _library_rule(task: AnySpec) -> str:
    return registry.format_of(task).prompts.library_rule(task)


def _messages(system: str, user: str) -> Messages:
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}]


# ---------------------------------------------------------------------------------------------- Planner

PLANNER_SYSTEM = Template("""\
# Planner agent

You are the Planner of a small team that makes $subject faster, one step per round. You \
decide what to change next. A Coder agent turns your plan into code; the system then compiles it, \
checks it against the original at every test size, times it and profiles it with Nsight Compute.

## Target GPU
$hardware

## Inputs you get each round
- The operator: its math, interface, data type, test sizes and tolerance.
- The best implementation so far (in round one, the original naive code).
- Its measured speedups, one block per test size, blocks split by a line `=====`. A block reads
  `Test case size: N: 4096. Complexity: 4096` (the size and its weight in the score) and then
  `Speedup ratio: 2.10` (original time / current time: above 1 is faster, below 1 means some earlier
  change made things slower and may need reworking).
- Nsight Compute metrics per size, reduced to those that matter for the kernel's bottleneck class
  (compute bound, memory bandwidth bound or memory latency bound), when profiling is on.
- The plan from the previous round, and whether it worked.

## How to plan
- Propose one optimization per round: a single, incremental change that can be implemented \
correctly in one rewrite. Many safe steps beat one risky overhaul.
- Base the choice on the evidence: name the metric or result that points to it and what you \
expect it to improve.
- Do not repeat a plan that just failed; fix its flaw or pick another direction.
- Think about every test size. Large sizes weigh most in the score, but all must stay correct; the \
wrapper may choose a different kernel or launch shape per size (even the original approach).
- Common levers: coalesced and vectorized memory access, tiling in shared memory or registers, \
launch configuration and occupancy, fusing kernels, warp shuffles for reductions, fewer \
synchronizations, less redundant work. Make sure shared-memory schemes hold for the largest \
sizes, not only small ones.
- Results must stay within the tolerance; never buy speed with accuracy beyond it.
- $library_rule
- $structure

## Your answer
A short plan in prose: the bottleneck you see, the one change to make, how to make it (launch \
shape, tile sizes, memory layout, ...) and the risks to watch for. No code, no file edits.
""")

PLANNER_USER = Template("""\
## Operator
$task

## Current best implementation
$code

## Measured results
$results

## Profile (Nsight Compute, filtered)
$profile

## Previous plan
$previous
""")


def planner_messages(
    *,
    task: AnySpec,
    precision: str,
    hardware: HardwareInfo,
    code: str,
    results: Sequence[SizeLike],
    profiles: Sequence[ProfileLike] | None = None,
    previous_plan: str | None = None,
    previous_failure: str | None = None,
    limits: PromptLimits = FULL,
) -> Messages:
    """`previous_failure` set means the previous plan did not produce a better valid kernel; it says why
    (e.g. "it failed to compile after 3 fixes" or "it was correct but slower: P 0.91 < 1.37")."""
    plan_text = _clip(previous_plan.strip(), limits.previous_plan) if previous_plan else ""
    if limits.previous_plan == 0 and previous_plan:
        plan_text = "(its text is left out to fit the model's context window)"
    if previous_plan is None:
        previous = "None yet: this is the first optimization round."
    elif previous_failure:
        previous = (
            f"The previous plan failed: {previous_failure}\n"
            "Its changes are not in the code above. Propose a different approach or a corrected variant.\n\n"
            f"{plan_text}"
        )
    else:
        previous = f"The previous plan worked and is part of the code above:\n\n{plan_text}"
    if not profiles:
        profile = "No profile this round (profiling is off)."
    elif limits.profile == "none":
        profile = "Left out to fit the model's context window."
    else:
        profile = format_profiles(profiles, metrics=limits.profile == "full")
    frame = registry.format_of(task).prompts
    system = PLANNER_SYSTEM.substitute(hardware=hardware.describe(), library_rule=_library_rule(task),
                                       subject=frame.planner_subject, structure=frame.planner_structure)
    user = PLANNER_USER.substitute(
        task=describe_task(task, precision, limits.task),
        code=code_block(clip(code, limits.code), code_language(task)),
        results=_clip(format_results(results), limits.results) or "No results yet.",
        profile=profile,
        previous=previous,
    )
    return _messages(system, user)


# ---------------------------------------------------------------------------------------------- Coder

CODER_USER = Template("""\
## Operator
$task

## Current implementation
$code

## $heading
$instructions
""")


def coder_messages(
    *,
    task: AnySpec,
    precision: str,
    hardware: HardwareInfo,
    code: str,
    instructions: str,
    fix: bool = False,
    limits: PromptLimits = FULL,
) -> Messages:
    """`instructions` is the Planner's plan, or (fix=True) the Debug agent's diagnosis of `code`."""
    heading = "Fix to apply (the code above fails)" if fix else "Optimization plan to implement"
    coder_system = registry.format_of(task).prompts.coder_system
    system = coder_system(task, precision, hardware.describe(), _library_rule(task))
    user = CODER_USER.substitute(
        task=describe_task(task, precision, limits.task),
        code=code_block(clip(code, limits.code), code_language(task)),
        heading=heading, instructions=_clip(instructions.strip(), limits.instructions),
    )
    return _messages(system, user)


# ---------------------------------------------------------------------------------------------- Compiler

COMPILER_SYSTEM = Template("""\
# Compiler agent

You are the Compiler agent of a team that optimizes a CUDA operator. Given the optimized source \
file and the default nvcc command for it, you choose the compile options that make this code run \
fastest while still compiling correctly.

## Target GPU
$hardware

## Rules
- Answer with one nvcc command on a single line: no line breaks, no explanation around it.
- Use only these options; anything else makes the system fall back to the default command:
$allowed
- Target only this GPU's architecture ($arch); code that uses features such as WMMA, tensor-core \
MMA or asynchronous copies needs it.
- The system supplies the input and output file names and the -c flag; you may leave them out.
- The command is never run by a shell: no pipes, redirections, `&&` or `;`.
- Options that change numerics (for example --use_fast_math) must not push the results outside the \
task's tolerance; when in doubt, leave them out.
""")

COMPILER_USER = Template("""\
## Source file
$code

## Default command
$default_command

Reply with the single nvcc command line to use.
""")


def compiler_messages(
    *,
    hardware: HardwareInfo,
    code: str,
    default_command: str,
    allowed_flags: Sequence[str],
    limits: PromptLimits = FULL,
) -> Messages:
    """`allowed_flags` describes the whitelist (e.g. "-O0..-O3", "-Xptxas -v"), passed in by the caller so
    the whitelist in worker/formats/cuda/flags.py stays the single source."""
    allowed = "\n".join(f"  - {flag}" for flag in allowed_flags)
    system = COMPILER_SYSTEM.substitute(
        hardware=hardware.describe(), allowed=allowed, arch=hardware.arch or "the worker's GPU"
    )
    user = COMPILER_USER.substitute(code=code_block(clip(code, limits.code)), default_command=default_command)
    return _messages(system, user)


# ---------------------------------------------------------------------------------------------- Debug

# What each kind of evidence is, and where to look first.
DEBUG_EVIDENCE: dict[str, tuple[str, str]] = {
    "compile": (
        "nvcc compile log",
        "The file did not compile. Read the first error first; later ones often follow from it. Errors at the "
        "wrapper or a kernel launch usually mean the code drifted from the required interface.",
    ),
    "runtime": (
        "compute-sanitizer memcheck log",
        "The operator crashed at run time. The memcheck log names the kernel, the faulting access and often the "
        "thread and block; check global and shared memory indexing, bounds guards and launch limits.",
    ),
    "mismatch": (
        "first mismatch (JSON)",
        "The operator ran but produced wrong values. The JSON gives the size, index, expected and actual "
        "value of the first wrong element. Wrong only at large sizes hints at a tiling, grid or indexing "
        "scheme that does not scale; values close to the expected ones hint at precision loss (accumulation "
        "order, data type); NaN or garbage hints at unwritten outputs or uninitialized memory.",
    ),
    "rejected": (
        "static check violations",
        "The file broke the structure rules before it was built. Each line names the rule and the line.",
    ),
    "timeout": (
        "timeout report",
        "The operator did not finish in time: look for infinite loops, deadlocked barriers (a __syncthreads() "
        "that not every thread reaches) or a grid far larger than intended.",
    ),
}

DEBUG_SYSTEM = Template("""\
# Debug agent

You are the Debug agent of a team that optimizes $subject. $failing \
fails; everything else in the test setup ($trusted) is known to be correct. Find the root cause from the evidence \
and describe how to fix it. A Coder agent will apply your fix.

## Target GPU
$hardware

## How to work
- Read the operator's math and the failing source carefully, then the evidence.
- Explain the root cause in a few sentences, pointing at the exact kernel, line or expression.
- Describe the fix precisely (what to change and to what), in prose. Keep the optimization's intent \
unless it is the cause; do not propose unrelated rewrites.
- The fix must respect the structure rules: $structure_rule

## Your answer
The diagnosis and the fix in prose. No code blocks.
""")

DEBUG_USER = Template("""\
## Operator
$task

## Failing source
$code

## Evidence: $evidence_name
$evidence_hint

$log
""")


def debug_messages(
    *,
    task: AnySpec,
    precision: str,
    hardware: HardwareInfo,
    code: str,
    kind: str,
    log: str | Mapping[str, Any],
    limits: PromptLimits = FULL,
) -> Messages:
    """`kind` is one of DEBUG_EVIDENCE ("compile", "runtime", "mismatch", "rejected", "timeout"); `log` is
    the compile log, the memcheck log, the first-mismatch dict (or its JSON), the violations or a report."""
    name, hint = DEBUG_EVIDENCE.get(kind, ("error report", "The operator failed; the report says how."))
    text = json.dumps(log, indent=2, default=str) if isinstance(log, Mapping) else str(log)
    frame = registry.format_of(task).prompts.debug_frame(task, precision)
    system = DEBUG_SYSTEM.substitute(hardware=hardware.describe(), **frame)
    user = DEBUG_USER.substitute(
        task=describe_task(task, precision, limits.task),
        code=code_block(clip(code, limits.code), code_language(task)),
        evidence_name=name,
        evidence_hint=hint,
        log=f"```\n{clip(text.strip(), limits.log) or '(empty)'}\n```",
    )
    return _messages(system, user)
