"""The C/CUDA format's parts of the agents' prompts: the operator's description, its library rule, the
Coder's rules for an `extern "C"` entry point and the Debug agent's frame."""

from __future__ import annotations

from string import Template

from worker.engine.prompttext import LIBRARY_NAMES, format_size, num
from worker.formats.cuda.spec import TaskSpec

DTYPES = {"fp32": "FP32 (`float`)", "bf16": "BF16 (`__nv_bfloat16` from <cuda_bf16.h>)"}

PLANNER_SUBJECT = "one CUDA operator"
PLANNER_STRUCTURE = 'The optimized operator is reached through one `extern "C"` wrapper with the original parameters.'


def entry_signature(task: TaskSpec, precision: str) -> str:
    """`extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N)`"""
    iface = task.interfaces[precision]
    params = ", ".join(f"{p.ctype} {p.name}" for p in iface.params)
    return f'extern "C" void {iface.optimized_entry}({params})'


def describe(task: TaskSpec, precision: str) -> str:
    """Title, math, interface, outputs, data type, sizes with their complexity, and the tolerance."""
    iface = task.interfaces[precision]
    tol = task.tolerance(precision)
    sizes = "\n".join(
        f"- {format_size(size)} (complexity {num(task.complexity_of(size))})" for size in task.sizes
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
        parts.append("Constants: " + ", ".join(f"{k} = {num(v)}" for k, v in task.constants.items()))
    parts.append(
        f"Correctness: at every size, each output element must satisfy |got - expected| <= atol + rtol * "
        f"|expected| with atol = {tol.atol:g}, rtol = {tol.rtol:g}; the original implementation's output "
        "is the expected value, and NaN never passes."
    )
    return "\n\n".join(parts)


def library_rule(task: TaskSpec) -> str:
    allowed = ", ".join(task.allowed_libraries)
    if allowed:
        return f"No library kernels except {allowed}, which this task allows; none of the other NVIDIA libraries."
    return f"No library kernels: {LIBRARY_NAMES} are off limits; write the kernels yourself."


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


def coder_system(task: TaskSpec, precision: str, hardware: str, rule: str) -> str:
    iface = task.interfaces[precision]
    blocked = ""
    if task.blocked_symbols:
        blocked = " This task also blocks: " + ", ".join(f"`{s}`" for s in task.blocked_symbols) + "."
    return CODER_SYSTEM.substitute(
        hardware=hardware,
        entry=iface.entry,
        signature=entry_signature(task, precision),
        library_rule=rule,
        blocked=blocked,
    )


def debug_frame(task: TaskSpec, precision: str) -> dict[str, str]:
    entry = task.interfaces[precision].optimized_entry
    return dict(subject="a CUDA operator", failing=f"The optimized entry point `{entry}`, together with "
                "the kernels it launches,", trusted="the original operator and the harness",
                structure_rule=f'kernels named `*_kernel_optimized`, one `extern "C" void {entry}(...)` '
                "wrapper with the original parameters, ending with `cudaDeviceSynchronize()`.")
