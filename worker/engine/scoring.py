"""Score a candidate over its sizes: P (paper eq. 2), geometric mean, review flags."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from worker.engine.results import SizeResult, TimingStats

SPEEDUP_REVIEW = 10.0  # per-size speedups above this are flagged for a human look, never silently accepted
CV_REVIEW = 0.05  # timing noise above 5% is flagged


def steady(stats: Iterable[TimingStats], max_cv: float = CV_REVIEW) -> bool:
    """Times fit to be cached and divided by later evaluations: no size's CV above `max_cv`. A cached baseline is
    the denominator of every later P at its sizes, so one slow sample kept there (a max_pooling_2d baseline's 0.68
    ms among 51 us samples, CV 138 %, mean +24 %: docs/benchmarks.md) would move all of them alike."""
    return all(s.cv <= max_cv for s in stats)


@dataclass(frozen=True)
class Score:
    score: float | None  # P
    geomean: float | None
    flags: tuple[str, ...]
    sizes: tuple[SizeResult, ...]  # with speedups and per-size flags filled in
    expert: float | None = None  # geometric mean of t_ref / t_cand over the sizes with a reference time


def weighted_score(complexities: list[float], speedups: list[float]) -> float:
    """P = sum_i T(N_i) * S_i / sum_i T(N_i)."""
    if not speedups or len(complexities) != len(speedups):
        raise ValueError("need one complexity per speedup, and at least one")
    total = math.fsum(complexities)
    if total <= 0:
        raise ValueError("complexities must sum to a positive weight")
    return math.fsum(t * s for t, s in zip(complexities, speedups, strict=True)) / total


def geometric_mean(values: list[float]) -> float:
    if not values or any(v <= 0 for v in values):
        raise ValueError("geometric mean needs positive values")
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def speedups(baseline: TimingStats, candidate: TimingStats) -> tuple[float, float]:
    """(mean-based, median-based) speedup t_base / t_cand."""
    return baseline.mean_ms / candidate.mean_ms, baseline.median_ms / candidate.median_ms


def score_sizes(sizes: list[SizeResult] | tuple[SizeResult, ...]) -> Score:
    """Fill speedups and flags into sizes that carry both timings, and compute P and the geomean.

    P uses the mean-based speedups (the paper's convention); the median ones are kept beside them.
    """
    scored: list[SizeResult] = []
    flags: list[str] = []
    for size in sizes:
        size_flags = list(size.flags)
        s_mean = s_median = s_ref = None
        if size.reference is not None and size.candidate is not None and size.candidate.mean_ms > 0:
            s_ref = size.reference.mean_ms / size.candidate.mean_ms
        if size.baseline is not None and size.candidate is not None:
            if size.candidate.mean_ms > 0 and size.candidate.median_ms > 0:
                s_mean, s_median = speedups(size.baseline, size.candidate)
                if s_mean > SPEEDUP_REVIEW:
                    size_flags.append(f"speedup>{SPEEDUP_REVIEW:g}x at {size.label} ({s_mean:.1f}x)")
            else:
                size_flags.append(f"zero candidate time at {size.label}")
        for who, stats in (("baseline", size.baseline), ("candidate", size.candidate), ("reference", size.reference)):
            if stats is not None and stats.cv > CV_REVIEW:
                size_flags.append(f"CV>{CV_REVIEW:.0%} at {size.label} ({who} {stats.cv:.1%})")
        flags.extend(f for f in size_flags if f not in size.flags)
        scored.append(
            replace(size, speedup=s_mean, speedup_median=s_median, reference_speedup=s_ref,
                    flags=tuple(dict.fromkeys(size_flags)))
        )
    refs = [s.reference_speedup for s in scored if s.reference_speedup is not None and s.reference_speedup > 0]
    expert = geometric_mean(refs) if refs else None
    timed = [s for s in scored if s.speedup is not None]
    if not timed or len(timed) != len(scored):
        return Score(None, None, tuple(flags), tuple(scored), expert)
    p = weighted_score([s.complexity for s in timed], [s.speedup for s in timed])
    geo = geometric_mean([s.speedup for s in timed])
    return Score(p, geo, tuple(flags), tuple(scored), expert)
