"""The make format's parts of the agents' prompts: the harness, its commands and scoring as the
CUDAHercules prompt gives them, the rules for the replaced solution file, and the Debug agent's frame."""

from __future__ import annotations

from string import Template
from typing import Any

from worker.engine.prompttext import LIBRARY_NAMES

PLANNER_SUBJECT = "one CUDA source file of a benchmark task"
PLANNER_STRUCTURE = ("The result is the complete replacement of the task's source file, keeping the interface its "
                     "harness calls.")


def describe(task: Any, precision: str) -> str:
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


def library_rule(task: Any) -> str:
    rules = [f"Do not call {LIBRARY_NAMES} or any library that does the task's work; write the kernels."]
    blocked = task.anti_cheat.blocked_patterns
    required = task.anti_cheat.required_patterns
    if blocked:
        rules.append("The file must not match: " + ", ".join(f"`{p}`" for p in blocked) + ".")
    if required:
        rules.append("The file must match: " + ", ".join(f"`{p}`" for p in required) + ".")
    return " ".join(rules)


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


def coder_system(task: Any, precision: str, hardware: str, rule: str) -> str:
    return CODER_SYSTEM_MAKE.substitute(hardware=hardware, library_rule=rule, solution_file=task.runner.solution_file)


def debug_frame(task: Any, precision: str) -> dict[str, str]:
    return dict(subject="the CUDA source file of a benchmark task", failing=f"The file "
                f"`{task.runner.solution_file}`", trusted="the task's harness, build files and reference",
                structure_rule="the complete file, keeping the interface the harness calls, within the "
                "task's restrictions.")
