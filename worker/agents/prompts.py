"""The four agents' prompts (Planner, Coder, Compiler, Debug), after the roles and rules of the
CUDAMaster paper (Appendix B), in our own words.

Each builder returns chat messages, `[{"role": "system", ...}, {"role": "user", ...}]`. The system
prompt holds the role, the GPU and the rules; the user prompt holds this turn's material. Every
system prompt opens with a "# <Name> agent" heading: the scripted test server tells agents apart by it.
Results reach the Planner in the paper's layout (one block per size, blocks split by "=====").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from string import Template
from typing import Any, Protocol

from worker.engine.gpu import GpuInfo
from worker.formats.cuda.spec import TaskSpec

Messages = list[dict[str, str]]
SEPARATOR = "====="
LOG_LIMIT = 12_000  # characters of a log or source shown to an agent; the head matters most
DTYPES = {"fp32": "FP32 (`float`)", "bf16": "BF16 (`__nv_bfloat16` from <cuda_bf16.h>)"}
LIBRARY_NAMES = "cuBLAS, cuDNN, cuSPARSE, cuFFT, cuRAND, CUB, Thrust or CUTLASS"
TORCH_TRIALS = 5  # KernelBench's correctness trials (worker.formats.cuda.evaluation.EvalOptions.torch_trials)

_KIB, _MIB = 1024, 1024 * 1024


# ---------------------------------------------------------------------------------------------- hardware


@dataclass(frozen=True)
class HardwareInfo:
    """What the agents are told about the GPU. Unknown values are left out of the prompt."""

    name: str
    compute_capability: str = ""  # "9.0"
    sm_count: int | None = None
    memory_bandwidth_gbs: float | None = None  # peak DRAM bandwidth
    l2_cache_bytes: int | None = None
    shared_mem_per_block_bytes: int | None = 48 * _KIB  # without opt-in (the static limit)
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
            lines.append(f"- Peak memory bandwidth: {_num(self.memory_bandwidth_gbs)} GB/s")
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
    ("H200", dict(sm_count=132, memory_bandwidth_gbs=4800, l2_cache_bytes=50 * _MIB,
                  shared_mem_per_block_optin_bytes=227 * _KIB, registers_per_sm=65536)),
    ("H100 PCIe", dict(sm_count=114, memory_bandwidth_gbs=2039, l2_cache_bytes=50 * _MIB,
                       shared_mem_per_block_optin_bytes=227 * _KIB, registers_per_sm=65536)),
    ("H100", dict(sm_count=132, memory_bandwidth_gbs=3352, l2_cache_bytes=50 * _MIB,
                  shared_mem_per_block_optin_bytes=227 * _KIB, registers_per_sm=65536)),
    ("A100-SXM4-80GB", dict(sm_count=108, memory_bandwidth_gbs=2039, l2_cache_bytes=40 * _MIB,
                            shared_mem_per_block_optin_bytes=163 * _KIB, registers_per_sm=65536)),
    ("A100", dict(sm_count=108, memory_bandwidth_gbs=1555, l2_cache_bytes=40 * _MIB,
                  shared_mem_per_block_optin_bytes=163 * _KIB, registers_per_sm=65536)),
    ("RTX 4090", dict(sm_count=128, memory_bandwidth_gbs=1008, l2_cache_bytes=72 * _MIB,
                      shared_mem_per_block_optin_bytes=99 * _KIB, registers_per_sm=65536)),
    ("L40S", dict(sm_count=142, memory_bandwidth_gbs=864, l2_cache_bytes=96 * _MIB,
                  shared_mem_per_block_optin_bytes=99 * _KIB, registers_per_sm=65536)),
    ("L4", dict(sm_count=58, memory_bandwidth_gbs=300, l2_cache_bytes=48 * _MIB,
                shared_mem_per_block_optin_bytes=99 * _KIB, registers_per_sm=65536)),
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


def _num(value: float) -> str:
    value = float(value)
    if value.is_integer():
        return str(int(value))
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _bytes(n: int) -> str:
    if n % _MIB == 0:
        return f"{n // _MIB} MiB"
    if n % _KIB == 0:
        return f"{n // _KIB} KiB"
    return f"{n} bytes"


def format_size(params: Mapping[str, float]) -> str:
    """`N: 1024, K: 4096`"""
    return ", ".join(f"{name}: {_num(value)}" for name, value in params.items())


def format_results(sizes: Sequence[SizeLike]) -> str:
    """Per size: `Test case size: N: 1024, K: 4096. Complexity: 4194304` then `Speedup ratio: 1.73`,
    blocks separated by a line `=====`."""
    blocks = []
    for size in sizes:
        speedup = "not measured" if size.speedup is None else f"{size.speedup:.2f}"
        blocks.append(
            f"Test case size: {format_size(size.params)}. Complexity: {_num(size.complexity)}\n"
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
        shown = _num(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
        lines.append(f"- {name}: {shown}{' ' + unit if unit else ''}")
    return "\n".join(lines)


def format_profiles(profiles: Sequence[ProfileLike]) -> str:
    """Per size: its header, kernel and bottleneck class, then its filtered metrics; split by `=====`."""
    blocks = []
    for p in profiles:
        bottleneck = str(p.bottleneck).replace("_", " ")
        head = f"Test case size: {format_size(p.params)}. Kernel: {p.kernel}. Bottleneck: {bottleneck}"
        body = format_metrics(p.metrics)
        blocks.append(f"{head}\n{body}" if body else head)
    return f"\n{SEPARATOR}\n".join(blocks)


def clip(text: str, limit: int = LOG_LIMIT) -> str:
    """Keep a long log's head (the first errors) and tail (the summary), marking the cut."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return f"{text[:head]}\n[... {len(text) - head - tail} characters left out ...]\n{text[-tail:]}"


def entry_signature(task: TaskSpec, precision: str) -> str:
    """`extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N)`"""
    iface = task.interfaces[precision]
    params = ", ".join(f"{p.ctype} {p.name}" for p in iface.params)
    return f'extern "C" void {iface.optimized_entry}({params})'


def describe_task(task: TaskSpec, precision: str) -> str:
    """Title, math, interface, outputs, data type, sizes with their complexity, and the tolerance."""
    if task.backend == "pytorch":
        return _describe_pytorch(task, precision)
    if task.backend == "make":
        return _describe_make(task, precision)
    iface = task.interfaces[precision]
    tol = task.tolerance(precision)
    sizes = "\n".join(
        f"- {format_size(size)} (complexity {_num(task.complexity_of(size))})" for size in task.sizes
    )
    parts = [
        f"Operator: {task.title} (`{iface.entry}`, {precision.upper()})",
        task.description.strip(),
        f"Interface of the original implementation:\n    {iface.signature}",
        f"Outputs (written by the operator): {', '.join(task.outputs)}",
        f"Data type: {DTYPES.get(precision, precision)}",
        f"Test sizes (complexity T = {task.complexity}, the weight of each size in the score):\n{sizes}",
    ]
    if task.constants:
        parts.append("Constants: " + ", ".join(f"{k} = {_num(v)}" for k, v in task.constants.items()))
    parts.append(
        f"Correctness: at every size, each output element must satisfy |got - expected| <= atol + rtol * "
        f"|expected| with atol = {tol.atol:g}, rtol = {tol.rtol:g}; the original implementation's output "
        "is the expected value, and NaN never passes."
    )
    return "\n\n".join(parts)


def _describe_pytorch(task: Any, precision: str) -> str:
    """A KernelBench task: the reference module's source is the specification."""
    tol = task.tolerance(precision)
    dtype = "torch.float32" if precision == "fp32" else "torch.bfloat16 (float inputs and the module's parameters cast)"
    constants = format_size(task.sizes[0]) if task.sizes and task.sizes[0] else "as get_inputs() builds them"
    model = task.baseline_source(precision).read_text(encoding="utf-8")
    parts = [
        f"Task: {task.title} (KernelBench `{task.name}`, {precision.upper()})",
        task.description.strip(),
        "Reference PyTorch module (`Model`); `get_init_inputs()` gives the constructor's arguments and "
        f"`get_inputs()` the forward's inputs:\n```python\n{clip(model.strip(), 2 * LOG_LIMIT)}\n```",
        f"Problem size: {constants}",
        f"Data type: {dtype}",
        f"Correctness: {TORCH_TRIALS} trials on fresh random inputs; each output must have the reference's shape "
        f"and satisfy |got - expected| <= atol + rtol * |expected| with atol = {tol.atol:g}, rtol = {tol.rtol:g} "
        "(NaN never passes); the inputs must be left unchanged.",
        "Score: the time of `Model.forward` in eager PyTorch divided by the time of `ModelNew.forward` (CUDA "
        "events, the whole device synchronized, L2 flushed before each call).",
    ]
    return "\n\n".join(parts)


def _describe_make(task: Any, precision: str) -> str:
    """A task.yaml task: the harness, its commands and its scoring, as the CUDAHercules prompt gives them."""
    tol = task.tolerance(precision)
    checks = task.success_checks()
    parts = [
        f"Task: {task.title} (`{task.name}`{', ' + task.domain if task.domain else ''})",
        f"Target GPU: {('sm_' + str(task.hardware.min_sm) + ' or newer') if task.hardware.min_sm else 'any'}",
        f"Source file to replace: {task.runner.solution_file}",
        task.description.strip(),
        f"Build and run: the system copies the task into a fresh folder, writes your file, runs `{task.build.cmd}` "
        f"and then `{task.execute.cmd}`; a valid run has {' and '.join(checks) or 'exit code 0'}.",
        f"Correctness: checked by the task's own harness against an expert implementation (atol = {tol.atol:g}, "
        f"rtol = {tol.rtol:g}).",
    ]
    if task.performance.enabled:
        parts.append("Score: the harness reports your kernel's time and an expert reference's time per test case; "
                     "the score is the original file's time divided by yours, and expert-relative speed the "
                     "reference's time divided by yours. Invalid or non-compiling files get no credit.")
    return "\n\n".join(p for p in parts if p)


def code_language(task: Any) -> str:
    """The fence tag of the task's code (and the viewer's lexer): Python for KernelBench, else CUDA."""
    return "python" if task.backend == "pytorch" else "cuda"


def _code_block(code: str, language: str = "cuda") -> str:
    return f"```{language}\n{code.strip()}\n```"


def _library_rule(task: TaskSpec) -> str:
    if task.backend == "pytorch":
        if task.forbid_torch_compute:
            return ("The work runs in your own CUDA kernels: ModelNew.forward may not call PyTorch compute "
                    "operations (torch.*, torch.nn.functional, tensor math methods, the @ operator) or nn layers; "
                    "allocating outputs and reshaping views is fine.")
        return ("Your own CUDA kernels must do the work you optimize; PyTorch operations may stay for the parts "
                "you do not replace (fusing several operations into one kernel is the usual lever).")
    if task.backend == "make":
        rules = [f"Do not call {LIBRARY_NAMES} or any library that does the task's work; write the kernels."]
        blocked = task.anti_cheat.blocked_patterns
        required = task.anti_cheat.required_patterns
        if blocked:
            rules.append("The file must not match: " + ", ".join(f"`{p}`" for p in blocked) + ".")
        if required:
            rules.append("The file must match: " + ", ".join(f"`{p}`" for p in required) + ".")
        return " ".join(rules)
    allowed = ", ".join(task.allowed_libraries)
    if allowed:
        return f"No library kernels except {allowed}, which this task allows; none of the other NVIDIA libraries."
    return f"No library kernels: {LIBRARY_NAMES} are off limits; write the kernels yourself."


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


# What is optimized, and the shape the result must keep, per task backend.
_PLANNER_FRAME = {
    "cuda": ("one CUDA operator",
             'The optimized operator is reached through one `extern "C"` wrapper with the original parameters.'),
    "pytorch": ("one PyTorch module (by replacing its work with custom CUDA kernels)",
                "The result is a Python module defining `class ModelNew(nn.Module)` with Model's constructor and "
                "forward signature; its kernels are compiled with torch.utils.cpp_extension.load_inline."),
    "make": ("one CUDA source file of a benchmark task",
             "The result is the complete replacement of the task's source file, keeping the interface its "
             "harness calls."),
}


def planner_messages(
    *,
    task: TaskSpec,
    precision: str,
    hardware: HardwareInfo,
    code: str,
    results: Sequence[SizeLike],
    profiles: Sequence[ProfileLike] | None = None,
    previous_plan: str | None = None,
    previous_failure: str | None = None,
) -> Messages:
    """`previous_failure` set means the previous plan did not produce a better valid kernel; it says why
    (e.g. "it failed to compile after 3 fixes" or "it was correct but slower: P 0.91 < 1.37")."""
    if previous_plan is None:
        previous = "None yet: this is the first optimization round."
    elif previous_failure:
        previous = (
            f"The previous plan failed: {previous_failure}\n"
            "Its changes are not in the code above. Propose a different approach or a corrected variant.\n\n"
            f"{previous_plan.strip()}"
        )
    else:
        previous = f"The previous plan worked and is part of the code above:\n\n{previous_plan.strip()}"
    profile = format_profiles(profiles) if profiles else "No profile this round (profiling is off)."
    subject, structure = _PLANNER_FRAME.get(task.backend, _PLANNER_FRAME["cuda"])
    system = PLANNER_SYSTEM.substitute(hardware=hardware.describe(), library_rule=_library_rule(task),
                                       subject=subject, structure=structure)
    user = PLANNER_USER.substitute(
        task=describe_task(task, precision),
        code=_code_block(clip(code, 3 * LOG_LIMIT), code_language(task)),
        results=format_results(results) or "No results yet.",
        profile=profile,
        previous=previous,
    )
    return _messages(system, user)


# ---------------------------------------------------------------------------------------------- Coder

CODER_SYSTEM = Template("""\
# Coder agent

You are the Coder of a team that optimizes a CUDA operator. You get the current source and either an \
optimization plan or a diagnosed bug, and you return the rewritten source file. The strategy is \
decided elsewhere: implement what you are given, completely and correctly.

## Target GPU
$hardware

## Rules for the file (breaking one gets the file rejected before it runs)
1. Kernels: every `__global__` function's name ends in `_kernel_optimized` (for example \
`${entry}_kernel_optimized`). Give device helpers and structs names that cannot collide with the \
original (an `Optimized` suffix works). Keep none of the original kernels.
2. Entry point: define exactly one host wrapper, with exactly these parameter types, names and order:
       $signature
   It chooses the launch configuration (grid, block, dynamic shared memory), launches the kernel(s), \
allocates and frees any scratch buffers it needs, and finishes with `cudaDeviceSynchronize();`.
3. The file is compiled by itself and linked with the original implementation and a test harness: \
no `main`, do not call or redefine the original entry point `$entry` or its kernels (their names \
are taken), no extra wrapper functions or namespaces around the entry point, and never write to \
the input buffers.
4. Leave the harness's job to the harness: no timing (cudaEvent*, clock, clock64, std::chrono), no \
device control (cudaSetDevice, cudaDeviceReset, cudaDeviceSetLimit), no files, processes, threads \
or environment access, no `##` token pasting, inline asm only inside device code.
5. Include every header you use, and only system headers in angle brackets (for example \
<cuda_runtime.h>, <cuda_bf16.h> for bf16, <mma.h> for WMMA, <cstdint>), so the file compiles cleanly.
6. $library_rule$blocked
7. Correctness comes first: every test size must match the original within the tolerance. Guard \
every bound (sizes need not be multiples of your tile or vector width) and check alignment before \
vectorized loads and stores.

## Your answer
The complete source file in one ```cuda code block. A sentence or two before it is fine; nothing after it.
""")

CODER_SYSTEM_PYTORCH = Template("""\
# Coder agent

You are the Coder of a team that speeds up a PyTorch module with custom CUDA kernels. You get the \
current Python source and either an optimization plan or a diagnosed bug, and you return the rewritten \
file. The strategy is decided elsewhere: implement what you are given, completely and correctly.

## Target GPU
$hardware

## Rules for the file (breaking one gets the file rejected before it runs)
1. Define `class ModelNew(nn.Module)` whose `__init__` takes the same arguments as `Model` (both are \
built from `get_init_inputs()` under the same random seed, so create any parameters in the same order \
and with the same shapes as Model, for example by keeping Model's nn layers to hold the weights) and \
whose `forward` takes the same inputs and returns outputs of the same shapes and dtype.
2. Compile your kernels with `torch.utils.cpp_extension.load_inline` (cuda_sources with the kernels and \
a host function, cpp_sources with its declaration, functions=[...]) at module level, and call them in \
`forward`.
3. $library_rule
4. No try/except (no fallback to PyTorch), no extra CUDA streams or threads, no timing code, no \
monkey-patching, no file, process or environment access, no imports beyond torch and the standard \
math helpers.
5. Launch on the current stream (`at::cuda::getCurrentCUDAStream()`), make inputs contiguous, use the \
right element type (`float`, or `at::BFloat16` / `__nv_bfloat16` for bf16), write every output element \
and never modify the inputs. Guard every bound.

## Your answer
The complete Python file in one ```python code block. A sentence or two before it is fine; nothing after it.
""")

CODER_SYSTEM_MAKE = Template("""\
# Coder agent

You are the Coder of a team that optimizes the CUDA source file of a benchmark task. You get the \
current file and either an optimization plan or a diagnosed bug, and you return the rewritten file. \
The strategy is decided elsewhere: implement what you are given, completely and correctly.

## Target GPU
$hardware

## Rules for the file
1. Return the complete contents of `$solution_file`: it replaces the task's file and is built by the \
task's own build command with its harness, unchanged otherwise.
2. Keep every function, type and signature the harness uses, exactly as in the current file.
3. $library_rule
4. Do not hard-code outputs, inspect or alter the timing, bypass the harness, or depend on fixed \
pointer values: the solution must be general for every problem size the harness tests.
5. Include every header you use; guard every bound.

## Your answer
The complete file in one ```cuda code block. A sentence or two before it is fine; nothing after it.
""")

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
    task: TaskSpec,
    precision: str,
    hardware: HardwareInfo,
    code: str,
    instructions: str,
    fix: bool = False,
) -> Messages:
    """`instructions` is the Planner's plan, or (fix=True) the Debug agent's diagnosis of `code`."""
    heading = "Fix to apply (the code above fails)" if fix else "Optimization plan to implement"
    if task.backend != "cuda":
        template = CODER_SYSTEM_PYTORCH if task.backend == "pytorch" else CODER_SYSTEM_MAKE
        system = template.substitute(
            hardware=hardware.describe(), library_rule=_library_rule(task),
            solution_file=task.runner.solution_file if task.backend == "make" else "",
        )
        user = CODER_USER.substitute(
            task=describe_task(task, precision), code=_code_block(clip(code, 3 * LOG_LIMIT), code_language(task)),
            heading=heading, instructions=instructions.strip(),
        )
        return _messages(system, user)
    iface = task.interfaces[precision]
    blocked = ""
    if task.blocked_symbols:
        blocked = " This task also blocks: " + ", ".join(f"`{s}`" for s in task.blocked_symbols) + "."
    system = CODER_SYSTEM.substitute(
        hardware=hardware.describe(),
        entry=iface.entry,
        signature=entry_signature(task, precision),
        library_rule=_library_rule(task),
        blocked=blocked,
    )
    user = CODER_USER.substitute(
        task=describe_task(task, precision),
        code=_code_block(clip(code, 3 * LOG_LIMIT)),
        heading=heading,
        instructions=instructions.strip(),
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
) -> Messages:
    """`allowed_flags` describes the whitelist (e.g. "-O0..-O3", "-Xptxas -v"), passed in by the caller so
    the whitelist in worker/formats/cuda/flags.py stays the single source."""
    allowed = "\n".join(f"  - {flag}" for flag in allowed_flags)
    system = COMPILER_SYSTEM.substitute(
        hardware=hardware.describe(), allowed=allowed, arch=hardware.arch or "the worker's GPU"
    )
    user = COMPILER_USER.substitute(code=_code_block(clip(code, 3 * LOG_LIMIT)), default_command=default_command)
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
    task: TaskSpec,
    precision: str,
    hardware: HardwareInfo,
    code: str,
    kind: str,
    log: str | Mapping[str, Any],
) -> Messages:
    """`kind` is one of DEBUG_EVIDENCE ("compile", "runtime", "mismatch", "rejected", "timeout"); `log` is
    the compile log, the memcheck log, the first-mismatch dict (or its JSON), the violations or a report."""
    name, hint = DEBUG_EVIDENCE.get(kind, ("error report", "The operator failed; the report says how."))
    text = json.dumps(log, indent=2, default=str) if isinstance(log, Mapping) else str(log)
    if task.backend == "pytorch":
        frame = dict(subject="a PyTorch module with custom CUDA kernels", failing="The module `ModelNew`, "
                     "together with the kernels it compiles and launches,", trusted="the reference `Model` and the "
                     "evaluation harness", structure_rule="one `class ModelNew(nn.Module)` with Model's constructor "
                     "and forward signature, kernels built with load_inline, no try/except, streams or threads.")
    elif task.backend == "make":
        frame = dict(subject="the CUDA source file of a benchmark task", failing=f"The file "
                     f"`{task.runner.solution_file}`", trusted="the task's harness, build files and reference",
                     structure_rule="the complete file, keeping the interface the harness calls, within the "
                     "task's restrictions.")
    else:
        entry = task.interfaces[precision].optimized_entry
        frame = dict(subject="a CUDA operator", failing=f"The optimized entry point `{entry}`, together with "
                     "the kernels it launches,", trusted="the original operator and the harness",
                     structure_rule=f'kernels named `*_kernel_optimized`, one `extern "C" void {entry}(...)` '
                     "wrapper with the original parameters, ending with `cudaDeviceSynchronize()`.")
    system = DEBUG_SYSTEM.substitute(hardware=hardware.describe(), **frame)
    user = DEBUG_USER.substitute(
        task=describe_task(task, precision),
        code=_code_block(clip(code, 3 * LOG_LIMIT), code_language(task)),
        evidence_name=name,
        evidence_hint=hint,
        log=f"```\n{clip(text.strip()) or '(empty)'}\n```",
    )
    return _messages(system, user)
