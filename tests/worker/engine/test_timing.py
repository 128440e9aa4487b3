"""The shared timing protocol (worker/engine/timing.py): statistics and the cache of reference times."""

import json
import statistics

from worker.engine.context import EvalOptions
from worker.engine.results import TimingStats
from worker.engine.timing import TimingCache, batches_for, cache_key, stats_from_samples, timing_of, timings_by_size


def test_statistics_of_samples():
    samples, host = [1.0, 2.0, 3.0, 6.0], [1.5, 2.5, 3.5, 6.5]
    stats = stats_from_samples(samples, host)
    std = statistics.stdev(samples)
    assert stats == TimingStats(4, 3.0, 2.5, 1.0, 6.0, std, std / 3.0, 3.5)


def test_one_sample_has_no_spread():
    assert stats_from_samples([2.5]) == TimingStats(1, 2.5, 2.5, 2.5, 2.5, 0.0, 0.0)


def test_a_child_result_gives_samples_or_statistics():
    assert timing_of({"samples_ms": [1.0, 3.0], "host_ms": [2.0, 4.0]}) == stats_from_samples([1.0, 3.0], [2.0, 4.0])
    given = {"samples": 2, "mean_ms": 2.0, "median_ms": 2.0, "min_ms": 1.0, "max_ms": 3.0, "std_ms": 1.4, "cv": 0.7,
             "samples_list_is_ignored": [1]}
    assert timing_of({"timing": given}) == TimingStats(2, 2.0, 2.0, 1.0, 3.0, 1.4, 0.7)
    assert timing_of({"timing": None}) is None and timing_of({}) is None
    sizes = {"sizes": [{"index": 1, "timing": given}, {"index": 0}]}
    assert timings_by_size(sizes) == {1: TimingStats(2, 2.0, 2.0, 1.0, 3.0, 1.4, 0.7)}


def test_the_cache_round_trips_and_refuses_what_does_not_decode(tmp_path):
    options = EvalOptions(timing_cache=str(tmp_path))
    parts = {"task": "t", "gpu": "G", "iters": 50}
    cache = TimingCache(options, "t-fp32", parts)
    assert cache.path == tmp_path / f"t-fp32-{cache_key(parts)}.json"
    assert cache.load(lambda d: d["x"]) is None  # nothing yet
    cache.store({"x": 1})
    stored = json.loads(cache.path.read_text(encoding="utf-8"))
    assert stored["x"] == 1 and "measured_at" in stored
    assert cache.load(lambda d: d["x"]) == 1
    assert cache.load(lambda d: d["missing"]) is None  # a malformed entry is measured again
    cache.path.write_text("{not json", encoding="utf-8")
    assert cache.load(lambda d: d["x"]) is None
    off = TimingCache(EvalOptions(timing_cache=str(tmp_path), use_baseline_cache=False), "t-fp32", parts)
    off.store({"x": 2})
    assert off.load(lambda d: d["x"]) is None


def test_the_key_depends_on_every_part_but_not_their_order():
    assert cache_key({"a": 1, "b": 2}) == cache_key({"b": 2, "a": 1})
    assert cache_key({"a": 1, "b": 2}) != cache_key({"a": 1, "b": 3})


def test_a_timing_that_adds_up_to_more_than_the_process_ran_is_refused():
    from worker.engine.timing import beyond_wall_time, timed_total_ms

    cuda = {"sizes": [{"index": 0, "timing": {"samples": 50, "mean_ms": 2.0, "batch": 4}},
                      {"index": 1, "timing": {"samples": 50, "mean_ms": 1.0}}]}
    assert timed_total_ms(cuda) == 50 * 2.0 * 4 + 50 * 1.0
    assert beyond_wall_time(cuda, 1.0) == ""  # 450 ms reported inside a 1 s process
    assert "forged" in beyond_wall_time(cuda, 0.3) and "0.45 s" in beyond_wall_time(cuda, 0.3)
    torch_like = {"samples_ms": [10.0] * 100}
    assert timed_total_ms(torch_like) == 1000.0
    assert beyond_wall_time(torch_like, 2.0) == "" and beyond_wall_time(torch_like, 0.5) != ""


def test_batches_are_decided_from_the_baselines_per_call_times_once_per_size():
    def t(ms: float) -> TimingStats:
        return TimingStats(samples=50, mean_ms=ms, median_ms=ms, min_ms=ms, max_ms=ms, std_ms=0.0, cv=0.0)

    times = {0: t(0.004), 1: t(0.02), 2: t(0.05), 3: t(2.0)}
    # 0.5 ms per sample: 125 calls capped at 64; 25 calls; at the threshold and above: one call per sample
    assert batches_for(times, 4, below_ms=0.05) == [64, 25, 1, 1]
    assert batches_for(times, 4, below_ms=0.0) == [1, 1, 1, 1]  # off
    assert batches_for({0: t(0.01)}, 2, below_ms=0.05) == [50, 1]  # a size without a time is not batched
