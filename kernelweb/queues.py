"""Celery queue names, shared by the producer (web) and the GPU workers.

Web-side housekeeping goes to DEFAULT_QUEUE; runs go to a GPU queue: `gpu` (any GPU worker) or
one per GPU model (`gpu.h100`), so a run can ask for the hardware it is meant to be measured on.
Every GPU worker consumes its model's queue and `gpu` (apps/fleet/launcher.py plans them).
Plain Python: the launcher and the web side both import it.
"""

import re

DEFAULT_QUEUE = "kernelweb"
GPU_QUEUE = "gpu"

# Words in nvidia-smi's GPU names that say nothing about the model: vendor and product-line
# prefixes, memory size, form factor and memory type ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB").
_NOISE = re.compile(r"nvidia|tesla|geforce|quadro|generation|\d+gb|sxm\d*|pcie|hbm\d*e?|nvl|mig|\d+g\.\d+gb")


def gpu_model(name: str) -> str:
    """A queue-safe model id from a GPU name: "NVIDIA H100 80GB HBM3" → "h100",
    "NVIDIA GeForce RTX 4090" → "rtx4090"; "" when nothing is left."""
    words = re.split(r"[\s_/()-]+", name.lower())
    return "".join(re.sub(r"[^a-z0-9]", "", w) for w in words if w and not _NOISE.fullmatch(w))


def gpu_queue(model: str = "") -> str:
    return f"{GPU_QUEUE}.{model}" if model else GPU_QUEUE


def queue_model(queue: str) -> str:
    """"gpu.h100" → "h100"; "" for the generic GPU queue and for queues that are not GPU queues."""
    return queue[len(GPU_QUEUE) + 1:] if queue.startswith(GPU_QUEUE + ".") else ""
