"""Loaded into a real Celery worker with `celery worker --include tests.support.simulated_gpu`.

This machine has no GPU, so the worker would fail every run at once with the no-GPU reason. For
the worker-loss tests a run has to be in flight when its worker dies; this module gives the worker a
simulated GPU and puts the scripted evaluator in place of the engine. Everything else is real:
the Celery prefork pool, the Redis broker, the database, the run's claim and reclaim, the
pipeline and manual turns, and the LLM calls through the openai SDK to the scripted HTTP server.
"""

from __future__ import annotations

import dataclasses
import os

from apps.fleet import heartbeat
from apps.runs import execution, jobs
from tests.support.scripted_eval import ScriptedEvaluator
from worker.agents.pipeline import Pipeline
from worker.engine import toolchain
from worker.engine.gpu import GpuInfo

# KW_SIMULATED_GPU names the model and KW_SIMULATED_GPU_INDEX the device, so that fleet tests can run workers
# of different GPUs on one host.
_INDEX = int(os.environ.get("KW_SIMULATED_GPU_INDEX", "0"))
SIMULATED = GpuInfo(index=_INDEX, name=os.environ.get("KW_SIMULATED_GPU", "Simulated GPU (tests)"),
                    uuid=f"GPU-simulated-{_INDEX}", compute_capability="9.0", memory_mib=81559, driver="simulated")


def _detect() -> toolchain.Toolchain:
    return dataclasses.replace(toolchain.detect(), gpu=SIMULATED, gpu_reason="", arch=SIMULATED.arch)


class _SimulatedPipeline(Pipeline):
    def __init__(self, spec, precision, config, client, sink, **kwargs):
        evaluator = ScriptedEvaluator(spec)
        super().__init__(spec, precision, config, client, sink, evaluate_fn=evaluator,
                         evaluate_baseline_fn=evaluator.baseline, **kwargs)


def _evaluate(spec, precision, code, flags, options, chain=None):
    return ScriptedEvaluator(spec)(spec, precision, code, flags, options)


SimulatedToolchain = type("SimulatedToolchain", (), {"detect": staticmethod(_detect)})
jobs.toolchain = heartbeat.toolchain = SimulatedToolchain
execution.Pipeline = _SimulatedPipeline
execution.evaluate = _evaluate
