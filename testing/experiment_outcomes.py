"""The engine's stand-in for the 12-task experiment (demo/experiment/script.json) where there is no GPU.

`ExpectedOutcomes` applies the real static checks to each candidate, then returns the verdict the script's
"tasks" list expects for that kernel file, with made-up timings and profiles (a bottleneck class per
turn, so the experiment's migration table has entries). Used by tests/worker/agents/test_experiment_script.py and,
under a real Celery worker, by `bench/experiment_fullstack.py --simulated-gpu` (testing/experiment_gpu.py).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from worker.engine.results import CompileResult, Evaluation, Profile, SizeResult, TimingStats, Verdict
from worker.formats.cuda.static_checks import baseline_kernel_names, check_source

REPO = Path(__file__).resolve().parents[1]
EXPERIMENT = REPO / "demo" / "experiment"
SPEEDUP = 3.0  # what a valid candidate is reported to gain at every size
CLASSES = {"baseline": "memory_latency_bound", "candidate": "memory_bandwidth_bound"}


def expected_tasks(script: Path = EXPERIMENT / "script.json") -> list[dict]:
    return json.loads(script.read_text(encoding="utf-8"))["tasks"]


def _timing(ms: float) -> TimingStats:
    return TimingStats(samples=50, mean_ms=ms, median_ms=ms, min_ms=ms, max_ms=ms, std_ms=0.0, cv=0.0)


class ExpectedOutcomes:
    def __init__(self, tasks: list[dict] | None = None):
        self.verdicts: dict[str, str] = {}
        for task in tasks or expected_tasks():
            for name, verdict in zip(task["candidates"], task["verdicts"], strict=True):
                self.verdicts[(REPO / name).read_text(encoding="utf-8").strip()] = verdict
        self.calls: list[tuple[str, str, str, str | None]] = []
        self._lock = threading.Lock()

    @staticmethod
    def _sizes(spec, speedup=None, correct=None, mismatch=None):
        return tuple(
            SizeResult(index=i, params=dict(size), complexity=spec.complexity_of(size), correct=correct,
                       first_mismatch=mismatch, baseline=_timing(1.0),
                       candidate=_timing(1.0 / speedup) if speedup else None, speedup=speedup)
            for i, size in enumerate(spec.sizes)
        )

    @staticmethod
    def _profiles(spec, kind: str, options) -> tuple[Profile, ...]:
        if getattr(options, "profile", "none") == "none":
            return ()
        return tuple(Profile(i, dict(size), f"{spec.name}_{kind}", CLASSES[kind], {}, {}, mode=options.profile)
                     for i, size in enumerate(spec.sizes))

    def baseline(self, spec, precision, options):
        return Evaluation(task=spec.name, precision=precision, verdict=Verdict.OK, kind="baseline",
                          sizes=self._sizes(spec), phases={"time": 0.1},
                          profiles=self._profiles(spec, "baseline", options))

    def __call__(self, spec, precision, code, flags, options):
        with self._lock:
            self.calls.append((spec.name, precision, code, flags))
        report = check_source(code, spec, precision, baseline_kernel_names(spec.baseline_source(precision)))
        assert report.ok, report.messages()
        verdict = self.verdicts[code.strip()]
        compiled = CompileResult("candidate", verdict != "compile_error", flags or "nvcc",
                                 "" if verdict != "compile_error" else
                                 "candidate.cu(30): error: too many arguments in function call")
        if verdict == "ok":
            return Evaluation(task=spec.name, precision=precision, verdict=Verdict.OK, score=SPEEDUP,
                              sizes=self._sizes(spec, SPEEDUP, True), compile=compiled,
                              profiles=self._profiles(spec, "candidate", options))
        if verdict == "incorrect":
            mismatch = {"seed": 20251122, "output": spec.outputs[0], "index": 0, "expected": 0.5, "got": 0.0}
            return Evaluation(task=spec.name, precision=precision, verdict=Verdict.INCORRECT,
                              reason="out of tolerance", sizes=self._sizes(spec, None, False, mismatch),
                              compile=compiled)
        assert verdict == "compile_error", verdict
        return Evaluation(task=spec.name, precision=precision, verdict=Verdict.COMPILE_ERROR,
                          reason="candidate failed to compile", compile=compiled)
