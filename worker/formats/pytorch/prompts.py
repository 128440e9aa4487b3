"""The PyTorch-module format's parts of the agents' prompts: the reference module as the specification,
the rules for a `ModelNew` built with load_inline, and the Debug agent's frame."""

from __future__ import annotations

from string import Template
from typing import Any

from worker.engine.prompttext import LOG_LIMIT, clip, format_size

TORCH_TRIALS = 5  # KernelBench's correctness trials (worker.formats.cuda.evaluation.EvalOptions.torch_trials)

PLANNER_SUBJECT = "one PyTorch module (by replacing its work with custom CUDA kernels)"
PLANNER_STRUCTURE = ("The result is a Python module defining `class ModelNew(nn.Module)` with Model's constructor and "
                     "forward signature; its kernels are compiled with torch.utils.cpp_extension.load_inline.")


def describe(task: Any, precision: str) -> str:
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


def library_rule(task: Any) -> str:
    if task.forbid_torch_compute:
        return ("The work runs in your own CUDA kernels: ModelNew.forward may not call PyTorch compute "
                "operations (torch.*, torch.nn.functional, tensor math methods, the @ operator) or nn layers; "
                "allocating outputs and reshaping views is fine.")
    return ("Your own CUDA kernels must do the work you optimize; PyTorch operations may stay for the parts "
            "you do not replace (fusing several operations into one kernel is the usual lever).")


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


def coder_system(task: Any, precision: str, hardware: str, rule: str) -> str:
    return CODER_SYSTEM_PYTORCH.substitute(hardware=hardware, library_rule=rule)


def debug_frame(task: Any, precision: str) -> dict[str, str]:
    return dict(subject="a PyTorch module with custom CUDA kernels", failing="The module `ModelNew`, "
                "together with the kernels it compiles and launches,", trusted="the reference `Model` and the "
                "evaluation harness", structure_rule="one `class ModelNew(nn.Module)` with Model's constructor "
                "and forward signature, kernels built with load_inline, no try/except, streams or threads.")
