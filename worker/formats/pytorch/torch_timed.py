"""Timed calls of the KernelBench child program (torch_harness.py loads this file by path; like the harness it
needs only the standard library and torch, never `worker`).

Every timed call gets fresh inputs: before call k, the fixed input buffers are refilled in place with the task's
own inputs under a seed drawn at run time (so addresses stay the same and contents never repeat: a result
remembered by address or by contents is stale). For a candidate, each call's outputs are then compared, outside
the timed region, with the reference Model's on the same inputs; the first wrong call stops the timing and is
reported (`failed_call`, `first_mismatch`), so doing less work on any timed call makes the verdict incorrect.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import torch


def flush_buffer(device: torch.device) -> torch.Tensor | None:
    """2x the L2 cache, written before every timed call so nothing of the previous call stays cached."""
    if device.type != "cuda":
        return None
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 1024 * 1024
    return torch.empty(2 * l2, dtype=torch.uint8, device=device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(
    call: Callable[[], Any],
    device: torch.device,
    iters: int,
    flush: torch.Tensor | None,
    device_sync: bool,
    before: Callable[[int], None] | None = None,
    after: Callable[[int, Any], dict[str, Any] | None] | None = None,
) -> tuple[list[float], list[float], dict[str, Any] | None]:
    """Per-call (event ms, host ms) and the first failed check. `before(k)` prepares call k (fresh inputs) and
    `after(k, out)` checks its outputs; both run outside the timed region. With device_sync, the end event is
    recorded only after the whole device is idle, so work the call left on any stream is inside the measurement."""
    events: list[float] = []
    host: list[float] = []
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for k in range(iters):
        if before is not None:
            before(k)
        if flush is not None:
            flush.zero_()
        sync(device)
        h0 = time.perf_counter()
        if device.type == "cuda":
            start.record()
            out = call()
            if device_sync:
                torch.cuda.synchronize()
            h1 = time.perf_counter()
            end.record()
            end.synchronize()
            events.append(start.elapsed_time(end))
        else:
            out = call()
            h1 = time.perf_counter()
            events.append((h1 - h0) * 1e3)
        host.append((h1 - h0) * 1e3)
        failed = after(k, out) if after is not None else None
        del out
        if failed is not None:
            return events, host, {"timed_call": k, **failed}
    return events, host, None


def synced_and_loose(call: Callable[[], Any], device: torch.device, pairs: int,
                     flush: torch.Tensor | None) -> tuple[list[float], list[float]]:
    """The same call timed with and without the device-wide sync, the two kinds alternating call by call (which
    comes first alternates too): a slow stretch of the host or a GPU clock change then falls on both alike.
    Timed as two separate phases, a host slowed by other work for one of them read as work on another stream
    (2.8x on an H200 with other tests building beside it)."""
    synced: list[float] = []
    loose: list[float] = []
    for k in range(pairs):
        for device_sync in ((True, False) if k % 2 == 0 else (False, True)):
            events, _, _ = timed(call, device, 1, flush, device_sync)
            (synced if device_sync else loose).extend(events)
    return synced, loose


class FreshInputs:
    """Call k's inputs: the task's get_inputs() under seed base + k, drawn on the device (so the GPU does not idle,
    and lower its clock, while the host draws them), copied into the buffers every call uses. The base is drawn
    from the OS at run time; the drawn values are kept, pristine, for the reference's check."""

    def __init__(self, task: Any, buffers: list[Any]):
        self.task, self.buffers = task, buffers
        self.base = random.SystemRandom().randrange(1 << 30)
        self.pristine: list[Any] = []

    def __call__(self, k: int) -> None:
        self.pristine = self.task.drawn_on_device(self.base + k)
        for buf, fresh in zip(self.buffers, self.pristine, strict=True):
            if isinstance(buf, torch.Tensor):
                buf.copy_(fresh)


def checker(
    model: torch.nn.Module,
    fresh: FreshInputs,
    compare_outputs: Callable[..., dict[str, Any] | None],
    outputs_of: Callable[[Any], list[Any]],
    atol: float,
    rtol: float,
) -> Callable[[int, Any], dict[str, Any] | None]:
    """after(k, out) for `timed`: the reference Model on call k's pristine inputs, compared with the outputs."""

    def after(k: int, out: Any) -> dict[str, Any] | None:
        got = outputs_of(out)
        expected = outputs_of(model(*fresh.pristine))
        sync(fresh.task.device)
        bad = compare_outputs(expected, got, atol, rtol)
        return None if bad is None else {"seed": fresh.base + k, **bad}

    return after
