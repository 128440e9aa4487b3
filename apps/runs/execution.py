"""What a GPU worker does with a run it received: claim it, run the pipeline, record the end.

A redelivered message (acks_late after a worker crash) finds the run no longer
queued and does nothing: the claim is the idempotency guard.
"""

from __future__ import annotations

import logging
import socket

from apps.runs.events import event_append
from apps.runs.services import run_claim, run_fail
from worker.gpu import detect_gpu

logger = logging.getLogger(__name__)


def run_execute(run_id: int) -> None:
    gpu = detect_gpu()
    host = socket.gethostname()
    if not run_claim(run_id, worker_host=host, gpu_name=gpu.name if gpu else ""):
        logger.info("run %s was not queued any more (claimed elsewhere or cancelled); skipping", run_id)
        return
    event_append(run_id, "worker.info", {"host": host, "gpu": gpu.name if gpu else None})
    if gpu is None:
        run_fail(
            run_id,
            f"No NVIDIA GPU on worker host {host}: runs need one to time and profile kernels. "
            "Start a Celery worker on a GPU host (see README, 'GPU workers') and launch the run again.",
        )
        return
    run_fail(run_id, "The optimization pipeline is not installed on this worker yet.")
