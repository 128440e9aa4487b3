"""The make format (CUDAHercules `task.yaml`): a folder with a Makefile-built harness; the candidate
replaces one solution file and the task's own program checks and times it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from worker.engine.extract import Extraction, extract_source_file
from worker.engine.formats import Display, PromptFragments, TaskFormat
from worker.formats.make import prompts
from worker.formats.make.evaluation import evaluate_make, evaluate_make_baseline, validate_make
from worker.formats.make.schema import load_make_spec


def _declares(path: Path) -> bool:
    return path.name == "task.yaml"


def _extract(spec: Any, precision: str, text: str, finish_reason: str | None) -> Extraction:
    return extract_source_file(text, spec.runner.solution_file, finish_reason)


def _catalog_fields(spec: Any, precision: str) -> dict[str, Any]:
    success = spec.execute.success
    return {
        "entry_point": spec.runner.solution_file,
        "interface": f"{spec.build.cmd} && {spec.execute.cmd}",
        "params": [], "outputs": [], "constants": {}, "inputs": {},
        "rules": {"blocked_patterns": list(spec.anti_cheat.blocked_patterns),
                  "required_patterns": list(spec.anti_cheat.required_patterns)},
        "details": {
            "task_id": spec.task_id, "task_class": spec.task_class, "domain": spec.domain,
            "tags": list(spec.tags), "min_sm": spec.hardware.min_sm, "solution_file": spec.runner.solution_file,
            "build": spec.build.cmd, "execute": spec.execute.cmd, "timeout_sec": spec.runner.timeout_sec,
            "success": {"exit_code": success.exit_code, "stdout_regex": success.stdout_regex},
            "correctness_mode": spec.correctness.mode, "performance": spec.performance.enabled,
        },
    }


FORMAT = TaskFormat(
    name="make", label="task.yaml + make (CUDAHercules)", spec_file="task.yaml", declares=_declares,
    load=load_make_spec, evaluate=evaluate_make, evaluate_baseline=evaluate_make_baseline, validate=validate_make,
    language="cuda",
    display=Display(badge="task.yaml", badge_title="a task.yaml task built with make",
                    baseline_name="Original solution file", interface_template="formats/make/interface.html",
                    shows_entry_point=False,
                    candidate_help="The complete replacement of the task's solution file, built by the task's own "
                                   "make command."),
    prompts=PromptFragments(
        describe=prompts.describe, library_rule=prompts.library_rule, planner_subject=prompts.PLANNER_SUBJECT,
        planner_structure=prompts.PLANNER_STRUCTURE, coder_system=prompts.coder_system,
        debug_frame=prompts.debug_frame,
    ),
    extract=_extract, catalog_fields=_catalog_fields,
)
