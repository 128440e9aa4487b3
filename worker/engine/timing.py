"""The timing protocol every format shares: raw samples or a child's JSON to `TimingStats`, and the cache of
reference times (the baseline, the eager Model, torch.compile, a task's shipped solution).

Formats measure differently (the C/CUDA harness and torch_harness.py time with CUDA events, a make task's
program prints its own times), but what a time means and how one is kept are decided here once:

- `stats_from_samples` turns per-call milliseconds into `TimingStats` (mean, median, min, max, sample
  standard deviation, CV = std / mean); `timing_of` reads a child's JSON
  (raw samples, or statistics the C/CUDA harness computed the same way).
- `TimingCache` is one cached measurement: its file is named by the parts that determine the time (task,
  precision, GPU model, toolchain, sources, warm-up and timed calls, seeds...), hashed, under
  `timing_cache_dir` (KW_TIMING_CACHE); written atomically, an unreadable entry is measured again.
- The protocol's defaults (WARMUP, ITERS, SEEDS, SEED_BASE) are EvalOptions' and the C/CUDA harness's.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from worker.engine.results import TimingStats

T = TypeVar("T")


class CacheOptions(Protocol):
    """What the cache reads of worker.engine.context.EvalOptions (which builds on this module)."""

    timing_cache: str | None

# The protocol's defaults (EvalOptions and the C/CUDA harness's command line take them from here): untimed
# warm-up calls, then timed calls; correctness seeds and the first seed.
WARMUP = 3
WARMUP_MS = 100.0  # and warm-up calls go on until they have run this long, so the GPU's clock has ramped up
ITERS = 50
SEEDS = 3
SEED_BASE = 20251122
# C/CUDA: sizes whose baseline call is shorter than this (ms) are timed in batches decided once from the
# baseline (docs/evaluation.md, "Batching short calls"). 0.05: the FP32 library repeated within 2 % for 37 of 50
# tasks batched against 34 per call, and every candidate of tests/gpu_candidates/ kept its verdict with it.
BATCH_BELOW_MS = 0.05


def stats_from_samples(samples: Sequence[float], host: Sequence[float] | None = None) -> TimingStats:
    """Per-call times in ms (and, optionally, the host's wall time of the same calls) as TimingStats."""
    mean = statistics.fmean(samples)
    std = statistics.stdev(samples) if len(samples) > 1 else 0.0
    return TimingStats(
        samples=len(samples),
        mean_ms=mean,
        median_ms=statistics.median(samples),
        min_ms=min(samples),
        max_ms=max(samples),
        std_ms=std,
        cv=std / mean if mean > 0 else 0.0,
        host_mean_ms=statistics.fmean(host) if host else None,
    )


def batches_for(times: dict[int, TimingStats], sizes: int, below_ms: float, target_ms: float = 0.5,
                max_batch: int = 64) -> list[int]:
    """Launches per sample for each size, decided once from the baseline's per-call times (C/CUDA batched
    timing, docs/evaluation.md): 1 for a size whose call takes below_ms or longer, else enough calls for target_ms,
    at most max_batch. Every process then times that size alike, the baseline's and every candidate's, where a
    decision from each process's own warm-up flipped between processes near the threshold."""
    out = []
    for i in range(sizes):
        t = times.get(i)
        if below_ms <= 0 or t is None or t.mean_ms >= below_ms:
            out.append(1)
        else:
            out.append(max(1, min(max_batch, math.ceil(target_ms / max(t.mean_ms, 1e-4)))))
    return out


def syncs_per_call(times: dict[int, TimingStats]) -> float:
    """The most synchronizes (or frees) per call that closed a queued sample's segment at any size (kw_sync.h;
    0 for synchronized timing, which does not count them). Above 1, the call goes back and forth between the host
    and the GPU, so the host's own speed is in its time: the queued protocol then times the candidate beside its
    baseline (docs/evaluation.md, "Interleaved timing")."""
    return max((t.closed_syncs / (t.samples * t.batch) for t in times.values() if t.samples), default=0.0)


def timing_of(entry: dict[str, Any]) -> TimingStats | None:
    """The timing in a child's result (or one size of it), when it holds one: raw per-call times
    (`samples_ms`, optionally `host_ms`) or statistics the child computed (a `timing` object)."""
    samples = entry.get("samples_ms")
    if isinstance(samples, list) and samples:
        host = entry.get("host_ms")
        return stats_from_samples(samples, host if isinstance(host, list) else None)
    timing = entry.get("timing")
    if not isinstance(timing, dict) or "mean_ms" not in timing:
        return None
    return TimingStats.from_dict(timing)


def timings_by_size(data: dict[str, Any] | None) -> dict[int, TimingStats]:
    """Size index -> TimingStats from a child's `sizes` list (entries without a timing are left out)."""
    out = {}
    for i, entry in enumerate((data or {}).get("sizes", [])):
        stats = timing_of(entry)
        if stats is not None:
            out[int(entry.get("index", i))] = stats
    return out


# A child cannot have timed more than it ran: its reported timed calls, in all, may not exceed the wall time the
# parent observed for the whole process (which also holds start-up, warm-up and the checks). The margin covers
# the two clocks (CUDA events against the parent's monotonic clock) and nothing else (docs/threat-model.md).
WALL_MARGIN = 1.02


def timed_total_ms(data: dict[str, Any] | None) -> float:
    """What a child's result says its timed calls took in all: the raw samples' sum, or per size samples x mean
    x launches per sample (the C/CUDA harness's statistics)."""
    total = 0.0
    for entry in [data or {}, *((data or {}).get("sizes") or [])]:
        samples = entry.get("samples_ms")
        if isinstance(samples, list):
            total += sum(float(x) for x in samples if isinstance(x, (int, float)))
        timing = entry.get("timing")
        if isinstance(timing, dict) and isinstance(timing.get("mean_ms"), (int, float)):
            total += float(timing["mean_ms"]) * int(timing.get("samples") or 0) * int(timing.get("batch") or 1)
    return total


def beyond_wall_time(data: dict[str, Any] | None, wall_s: float) -> str:
    """Why a child's reported timing cannot be true because it exceeds the process's own wall time, or ""."""
    total = timed_total_ms(data)
    if total > wall_s * 1e3 * WALL_MARGIN + 1.0:
        return (f"the timed calls it reported add up to {total / 1e3:.3g} s, but its process ran {wall_s:.3g} s in "
                "all (measured by the evaluator): the timing was forged, so the result is refused")
    return ""


def cache_key(parts: dict[str, Any]) -> str:
    """A hash of everything that determines a time: a change to any part is a different entry."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class TimingCache:
    """One cached measurement: `<timing_cache_dir>/<prefix>-<cache_key(parts)>.json`."""

    def __init__(self, options: CacheOptions, prefix: str, parts: dict[str, Any], *, indent: int | None = 1):
        self.enabled = options.use_baseline_cache
        self.key = cache_key(parts)
        self.path = timing_cache_dir(options) / f"{prefix}-{self.key}.json"
        self.indent = indent

    def load(self, decode: Callable[[dict[str, Any]], T | None]) -> T | None:
        """`decode` of the cached entry; None when caching is off, there is no entry, or it does not decode
        (a malformed entry is measured again, never an error)."""
        if not self.enabled or not self.path.is_file():
            return None
        try:
            return decode(json.loads(self.path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def store(self, data: dict[str, Any]) -> None:
        """Write the entry atomically, stamped with when it was measured."""
        entry = dict(data)
        entry.setdefault("measured_at", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        write_json_atomic(self.path, entry, indent=self.indent)


def timing_cache_dir(options: CacheOptions) -> Path:
    """Where baseline timings are cached (per task, GPU, toolchain...; each engine names its files)."""
    return Path(
        options.timing_cache
        or os.environ.get("KW_TIMING_CACHE")
        or Path.home() / ".cache" / "kernelweb" / "baseline-times"
    )


def write_json_atomic(path: Path, data: Any, indent: int | None = 1) -> None:
    """Write JSON so that a reader sees the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=indent)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
