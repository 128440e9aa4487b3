"""Text helpers the agents' prompts and the formats' prompt fragments share (worker.agents.prompts,
worker/formats/*/prompts.py): number and size formatting, clipping long logs, code fences."""

from __future__ import annotations

from collections.abc import Mapping

LOG_LIMIT = 12_000  # characters of a log or source shown to an agent; the head matters most
LIBRARY_NAMES = "cuBLAS, cuDNN, cuSPARSE, cuFFT, cuRAND, CUB, Thrust or CUTLASS"

KIB, MIB = 1024, 1024 * 1024


def num(value: float) -> str:
    value = float(value)
    if value.is_integer():
        return str(int(value))
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def format_size(params: Mapping[str, float]) -> str:
    """`N: 1024, K: 4096`"""
    return ", ".join(f"{name}: {num(value)}" for name, value in params.items())


def clip(text: str, limit: int = LOG_LIMIT) -> str:
    """Keep a long log's head (the first errors) and tail (the summary), marking the cut."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return f"{text[:head]}\n[... {len(text) - head - tail} characters left out ...]\n{text[-tail:]}"


def code_block(code: str, language: str = "cuda") -> str:
    return f"```{language}\n{code.strip()}\n```"
