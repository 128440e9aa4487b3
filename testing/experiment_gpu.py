"""Loaded into a real Celery worker (`celery worker --include testing.experiment_gpu`) for a dry run of
bench/experiment_fullstack.py on a machine without a GPU (`--simulated-gpu`).

The worker gets a simulated H100, and the engine is replaced by testing.experiment_outcomes: the real
static checks, then the verdicts demo/experiment/script.json expects. Everything else is what the GPU host
runs: the Celery prefork pool, the embedded broker, the database, the pipeline, the real prompts sent through
the openai SDK to the scripted LLM server, the API and the analyses.
"""

from __future__ import annotations

import dataclasses

from apps.fleet import heartbeat
from apps.runs import execution
from testing.experiment_outcomes import ExpectedOutcomes
from worker.agents.pipeline import Pipeline
from worker.engine import toolchain
from worker.engine.gpu import GpuInfo

SIMULATED = GpuInfo(index=0, name="NVIDIA H100 80GB HBM3 (simulated)", uuid="GPU-simulated-h100",
                    compute_capability="9.0", memory_mib=81559, driver="simulated")
ENGINE = ExpectedOutcomes()


def _detect() -> toolchain.Toolchain:
    return dataclasses.replace(toolchain.detect(), gpu=SIMULATED, gpu_reason="", arch=SIMULATED.arch)


class _SimulatedPipeline(Pipeline):
    def __init__(self, spec, precision, config, client, sink, **kwargs):
        super().__init__(spec, precision, config, client, sink, evaluate_fn=ENGINE,
                         evaluate_baseline_fn=ENGINE.baseline, **kwargs)


SimulatedToolchain = type("SimulatedToolchain", (), {"detect": staticmethod(_detect)})
execution.toolchain = heartbeat.toolchain = SimulatedToolchain
execution.Pipeline = _SimulatedPipeline
