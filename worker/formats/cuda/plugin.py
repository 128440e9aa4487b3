"""The C/CUDA format (MSKernelBench): a `spec.toml` naming an `extern "C"` entry point, a naive `.cu`
baseline and a CPU reference, built with nvcc against the shared C++ harness (tasks/_harness)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from worker.engine.extract import Extraction, extract_code
from worker.engine.formats import CompileFlags, Display, PromptFragments, TaskFormat
from worker.engine.taskspec import read_toml
from worker.formats.cuda import prompts
from worker.formats.cuda.evaluation import evaluate, evaluate_baseline, evaluate_reference, validate
from worker.formats.cuda.flags import ALLOWED_FLAGS_TEXT, default_flags
from worker.formats.cuda.spec import TaskSpec, load_spec


def _declares(path: Path) -> bool:
    return read_toml(path).get("backend", "cuda") == "cuda"


def _extract(spec: TaskSpec, precision: str, text: str, finish_reason: str | None) -> Extraction:
    return extract_code(text, spec.interfaces[precision].entry, finish_reason)


def _catalog_fields(spec: TaskSpec, precision: str) -> dict[str, Any]:
    iface = spec.interfaces[precision]
    return {
        "entry_point": iface.entry,
        "interface": iface.signature,
        "params": [{"name": p.name, "type": p.ctype} for p in iface.params],
        "outputs": list(spec.outputs),
        "constants": spec.constants,
        "inputs": spec.inputs,
        "rules": {
            "blocked_symbols": list(spec.blocked_symbols),
            "allowed_libraries": list(spec.allowed_libraries),
        },
        "details": {},
    }


def _missing(spec: TaskSpec) -> str | None:
    return None if spec.harness_source().is_file() else "[harness] harness.cu is missing from the folder"


FORMAT = TaskFormat(
    name="cuda", label="C/CUDA (MSKernelBench)", spec_file="spec.toml", declares=_declares, load=load_spec,
    evaluate=evaluate, evaluate_baseline=evaluate_baseline, validate=validate,
    language="cuda",
    display=Display(badge="", badge_title="", baseline_name="Baseline",
                    interface_template="formats/cuda/interface.html",
                    shows_entry_point=True,
                    candidate_help='Defines extern "C" void <entry>_optimized(<same parameters>).'),
    prompts=PromptFragments(
        describe=prompts.describe, library_rule=prompts.library_rule, planner_subject=prompts.PLANNER_SUBJECT,
        planner_structure=prompts.PLANNER_STRUCTURE, coder_system=prompts.coder_system,
        debug_frame=prompts.debug_frame,
    ),
    extract=_extract, catalog_fields=_catalog_fields,
    compile_flags=CompileFlags(default=default_flags, allowed_text=ALLOWED_FLAGS_TEXT),
    evaluate_reference=evaluate_reference, library_census=True, missing=_missing,
)
