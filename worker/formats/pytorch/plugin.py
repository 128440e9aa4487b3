"""The PyTorch-module format (KernelBench): a `spec.toml` with `backend = "pytorch"` beside a `Model`
file; candidates are a `ModelNew` module, built and run by the sandboxed torch harness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from worker.engine.extract import Extraction, extract_python_module
from worker.engine.formats import Display, PromptFragments, TaskFormat
from worker.engine.taskspec import read_toml
from worker.formats.pytorch import prompts
from worker.formats.pytorch.evaluation import evaluate_pytorch, evaluate_pytorch_baseline, validate_pytorch
from worker.formats.pytorch.spec import load_pytorch_spec


def _declares(path: Path) -> bool:
    return read_toml(path).get("backend") == "pytorch"


def _extract(spec: Any, precision: str, text: str, finish_reason: str | None) -> Extraction:
    return extract_python_module(text, "ModelNew", finish_reason)


def _catalog_fields(spec: Any, precision: str) -> dict[str, Any]:
    return {
        "entry_point": "ModelNew",
        "interface": spec.interface,
        "params": [], "outputs": [], "constants": {}, "inputs": {},
        "rules": {"forbid_torch_compute": spec.forbid_torch_compute},
        "details": {"model_file": Path(spec.model_file).name, "compare_compile": spec.compare_compile},
    }


FORMAT = TaskFormat(
    name="pytorch", label="PyTorch module (KernelBench)", spec_file="spec.toml", declares=_declares,
    load=load_pytorch_spec, evaluate=evaluate_pytorch, evaluate_baseline=evaluate_pytorch_baseline,
    validate=validate_pytorch,
    language="python",
    display=Display(badge="KernelBench", badge_title="a PyTorch Model to beat with ModelNew",
                    baseline_name="Reference module", interface_template="formats/pytorch/interface.html",
                    shows_entry_point=False,
                    candidate_help="A Python file defining class ModelNew(nn.Module) with Model's constructor and "
                                   "forward, its kernels built with torch.utils.cpp_extension.load_inline."),
    prompts=PromptFragments(
        describe=prompts.describe, library_rule=prompts.library_rule, planner_subject=prompts.PLANNER_SUBJECT,
        planner_structure=prompts.PLANNER_STRUCTURE, coder_system=prompts.coder_system,
        debug_frame=prompts.debug_frame,
    ),
    extract=_extract, catalog_fields=_catalog_fields, baseline_is_reference=True,
)
