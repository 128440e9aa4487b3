import math

import pytest

from worker.engine.results import SizeResult, TimingStats
from worker.engine.scoring import geometric_mean, score_sizes, weighted_score


def stats(mean, median=None, cv=0.01):
    median = mean if median is None else median
    return TimingStats(50, mean, median, mean * 0.9, mean * 1.1, mean * cv, cv)


def size(i, n, base, cand):
    return SizeResult(i, {"N": n}, float(n), baseline=base, candidate=cand)


def test_score_is_the_complexity_weighted_mean_of_mean_based_speedups():
    # T = 1 and 3; mean speedups 2 and 3 -> P = (1*2 + 3*3) / 4 = 2.75.
    # The medians say 4 and 2 (P would be 2.5): P must follow the means.
    sizes = [size(0, 1, stats(2.0, 2.0), stats(1.0, 0.5)), size(1, 3, stats(6.0, 6.0), stats(2.0, 3.0))]
    scored = score_sizes(sizes)
    assert scored.score == pytest.approx(2.75)
    assert scored.geomean == pytest.approx(math.sqrt(6.0))
    assert [s.speedup for s in scored.sizes] == [pytest.approx(2.0), pytest.approx(3.0)]
    assert [s.speedup_median for s in scored.sizes] == [pytest.approx(4.0), pytest.approx(2.0)]


def test_weighted_score_and_geomean_by_hand():
    assert weighted_score([1024, 4096], [1.0, 2.0]) == pytest.approx((1024 + 8192) / 5120)
    assert geometric_mean([0.5, 2.0]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        weighted_score([1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        geometric_mean([0.0, 1.0])


def test_flags_speedups_above_ten_times_for_review():
    scored = score_sizes([size(0, 1024, stats(22.0), stats(2.0)), size(1, 2048, stats(10.0), stats(1.0))])
    assert scored.flags == ("speedup>10x at N=1024 (11.0x)",)  # exactly 10x is not flagged
    assert scored.sizes[0].flags == ("speedup>10x at N=1024 (11.0x)",)


def test_flags_timing_noise_above_five_percent_on_either_side():
    scored = score_sizes([size(0, 64, stats(1.0, cv=0.06), stats(1.0, cv=0.05))])
    assert scored.flags == ("CV>5% at N=64 (baseline 6.0%)",)


def test_no_score_when_a_size_lacks_a_timing():
    scored = score_sizes([size(0, 1, stats(1.0), stats(1.0)), size(1, 2, stats(1.0), None)])
    assert scored.score is None and scored.geomean is None
    assert scored.sizes[0].speedup == pytest.approx(1.0)
