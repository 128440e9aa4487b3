"""The GPU candidates of tests/gpu_candidates/: which task each is for and what it should get.

Each file says so in its header comment: the task as "(vector_add FP32)" or "for softmax (BF16)" (else
its name: `<task>_...`, `<task>_bf16_...`), the outcome as "// Expected: incorrect ..."; an explicit
`// expect: <verdict>` line wins. The candidates of the demo experiment (demo/experiment/script.json
carries their text verbatim, so they cannot gain a header line) get the verdicts that script expects;
any other `*_fast.cu` is expected to be correct.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from worker.engine.taskspec import PRECISIONS
from worker.registry import discover_tasks

REPO = Path(__file__).resolve().parents[1]
LIBRARY = {s.name: s for s in discover_tasks(REPO / "tasks", backends=("cuda",)).specs}
CASES = [(s, p) for s in LIBRARY.values() for p in PRECISIONS if p in s.interfaces]
CANDIDATE_DIR = REPO / "tests" / "gpu_candidates"
CANDIDATE_FILES = sorted(CANDIDATE_DIR.glob("*.cu"))
EXPERIMENT_SCRIPT = REPO / "demo" / "experiment" / "script.json"


def experiment_verdicts(script: Path = EXPERIMENT_SCRIPT) -> dict[str, str]:
    """{file name: verdict} for every candidate the demo experiment's script delivers."""
    tasks = json.loads(script.read_text(encoding="utf-8"))["tasks"]
    return {Path(name).name: verdict for task in tasks
            for name, verdict in zip(task["candidates"], task["verdicts"], strict=True)}


def task_of(path: Path) -> tuple[str, str]:
    """('vector_add', 'fp32') from a header like '(vector_add FP32)' or 'for softmax (BF16)'."""
    head = path.read_text(encoding="utf-8")[:600]
    m = re.search(r"\((\w+) (FP32|BF16)\)", head) or re.search(r"for (\w+) \((FP32|BF16)\)", head)
    if m and m.group(1) in LIBRARY:
        return m.group(1), m.group(2).lower()
    names = sorted((n for n in LIBRARY if path.stem.startswith(n + "_")), key=len, reverse=True)
    if not names:
        raise LookupError(f"{path.name} names no task of the library")
    return names[0], "bf16" if path.stem[len(names[0]) :].startswith("_bf16") else "fp32"


def expected_verdict(path: Path) -> str | None:
    text = path.read_text(encoding="utf-8")
    m = re.search(r"^\s*//\s*expect\s*:\s*(\w+)\s*$", text, re.M | re.I)
    if m:
        return m.group(1).lower()
    m = re.search(r"^//\s*Expected:\s*(.*(?:\n//(?!\s*Expected).*)*)", text, re.M)
    if not m:
        scripted = experiment_verdicts().get(path.name)
        return scripted or ("ok" if path.stem.endswith("_fast") else None)
    prose = " ".join(line.lstrip("/ ") for line in m.group(1).splitlines()).lower()
    first_sentence = prose.split(". ")[0]
    for phrase, verdict in (
        ("incorrect", "incorrect"),
        ("rejected", "rejected"),
        ("runtime error", "runtime_error"),
        ("timeout", "timeout"),
        ("compile error", "compile_error"),
    ):
        if phrase in first_sentence:
            return verdict
    return "ok" if first_sentence.startswith(("correct", "faster", "ok")) else None


def options_for(path: Path, options: Any) -> Any:
    """The evaluation options for a candidate: one expected to hang is stopped after 20 s (its verdict, not its
    minutes)."""
    return dataclasses.replace(options, check_timeout_s=20) if expected_verdict(path) == "timeout" else options
