"""Celery queue names, shared by the producer (web) and the GPU workers.

Web-side housekeeping goes to DEFAULT_QUEUE; runs go to a GPU queue, one per GPU
model in production (e.g. `gpu.h100`), so a worker pinned to a GPU with
CUDA_VISIBLE_DEVICES consumes only runs meant for its hardware.
"""

DEFAULT_QUEUE = "kernelweb"
GPU_QUEUE = "gpu"


def gpu_queue(model: str = "") -> str:
    return f"{GPU_QUEUE}.{model}" if model else GPU_QUEUE
