"""Loaded into a real Celery worker (`celery worker --include testing.experiment_gpu`) for a dry run of
bench/experiment_fullstack.py on a machine without a GPU (`--simulated-gpu`).

The worker gets a simulated H100, and the engine is replaced by testing.experiment_outcomes: the real
static checks, then the verdicts demo/experiment/script.json expects. Everything else is what the GPU host
runs: the Celery prefork pool, the embedded broker, the database, the pipeline, the real prompts sent through
the openai SDK to the scripted LLM server, the API and the analyses.
"""

from __future__ import annotations

import dataclasses
import os
import time

from apps.fleet import heartbeat
from apps.runs import execution, jobs
from testing.experiment_outcomes import ExpectedOutcomes
from worker.agents.pipeline import Pipeline
from worker.engine import toolchain
from worker.engine.gpu import GpuInfo
from worker.engine.gpu_lock import gpu_lock

# KW_SIMULATED_GPU_INDEX: which simulated GPU of the host this worker has (bench/multi_gpu.py runs several);
# KW_SIMULATED_GPU_SECONDS: how long each evaluation holds that GPU's real lock (worker/engine/gpu_lock.py),
# standing in for the GPU time of compiling, checking and timing.
_INDEX = int(os.environ.get("KW_SIMULATED_GPU_INDEX", "0"))
SIMULATED = GpuInfo(index=_INDEX, name="NVIDIA H100 80GB HBM3 (simulated)", uuid=f"GPU-simulated-h100-{_INDEX}",
                    compute_capability="9.0", memory_mib=81559, driver="simulated")
GPU_SECONDS = float(os.environ.get("KW_SIMULATED_GPU_SECONDS", "0"))


class _HeldOutcomes(ExpectedOutcomes):
    """The expected verdicts, each after holding the simulated GPU's lock for GPU_SECONDS."""

    def _hold(self) -> None:
        if GPU_SECONDS > 0:
            with gpu_lock(SIMULATED.lock_key):
                time.sleep(GPU_SECONDS)

    def baseline(self, spec, precision, options):
        self._hold()
        return super().baseline(spec, precision, options)

    def __call__(self, spec, precision, code, flags, options):
        self._hold()
        return super().__call__(spec, precision, code, flags, options)


ENGINE = _HeldOutcomes()


def _detect() -> toolchain.Toolchain:
    return dataclasses.replace(toolchain.detect(), gpu=SIMULATED, gpu_reason="", arch=SIMULATED.arch)


class _SimulatedPipeline(Pipeline):
    def __init__(self, spec, precision, config, client, sink, **kwargs):
        super().__init__(spec, precision, config, client, sink, evaluate_fn=ENGINE,
                         evaluate_baseline_fn=ENGINE.baseline, **kwargs)


SimulatedToolchain = type("SimulatedToolchain", (), {"detect": staticmethod(_detect)})
jobs.toolchain = heartbeat.toolchain = SimulatedToolchain
execution.Pipeline = _SimulatedPipeline
