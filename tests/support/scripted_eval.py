"""A stand-in for the evaluation engine where there is no GPU.

`ScriptedEvaluator` reads the verdict a test wrote into each candidate (`// outcome: ok 1.8`,
`// outcome: incorrect`, `// outcome: compile_error [line]`) and returns the Evaluation the engine would
return. The pipeline tests use it in-process; `tests/support/simulated_gpu.py` puts it under a real
Celery worker.
"""

from __future__ import annotations

import re

from worker.engine.results import CompileResult, Evaluation, SizeResult, TimingStats, Verdict

PLAN = "Use a grid-stride loop with float4 loads."
COMMAND = "nvcc -O3 -arch=sm_90 --use_fast_math"


def kernel(outcome: str) -> str:
    return f"""Here is the kernel.
```cuda
// outcome: {outcome}
#include <cuda_runtime.h>
__global__ void add_kernel_optimized(const float* A, const float* B, float* C, int N) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}}
extern "C" void vadd_optimized(const float* A, const float* B, float* C, int N) {{
    add_kernel_optimized<<<(N + 255) / 256, 256>>>(A, B, C, N);
    cudaDeviceSynchronize();
}}
```"""


def _timing(ms: float) -> TimingStats:
    return TimingStats(samples=50, mean_ms=ms, median_ms=ms, min_ms=ms, max_ms=ms, std_ms=0.0, cv=0.0)


class ScriptedEvaluator:
    """Turns `// outcome: <verdict> [P]` in a candidate into the Evaluation the engine would return."""

    def __init__(self, spec, baseline_verdict=Verdict.OK):
        self.spec = spec
        self.baseline_verdict = baseline_verdict
        self.calls: list[tuple[str, str | None]] = []

    def sizes(self, speedup: float | None, correct=True, mismatch=None):
        return tuple(
            SizeResult(index=i, params=dict(size), complexity=self.spec.complexity_of(size), correct=correct,
                       first_mismatch=mismatch, baseline=_timing(1.0),
                       candidate=_timing(1.0 / speedup) if speedup else None, speedup=speedup)
            for i, size in enumerate(self.spec.sizes)
        )

    def baseline(self, spec, precision, options):
        reason = "no GPU here" if self.baseline_verdict == Verdict.NO_GPU else ""
        return Evaluation(task=spec.name, precision=precision, verdict=self.baseline_verdict, reason=reason,
                          kind="baseline", sizes=self.sizes(None), phases={"time": 0.5})

    def __call__(self, spec, precision, code, flags, options):
        self.calls.append((code, flags))
        verdict, *rest = re.search(r"// outcome: (.*)", code).group(1).split()
        compile_ok = verdict != "compile_error"
        # `// outcome: compile_error 7` puts the error on line 7 (default 3), as nvcc writes it
        line = rest[0] if not compile_ok and rest else "3"
        compiled = CompileResult(role="candidate", ok=compile_ok, command=flags or "nvcc",
                                 log="" if compile_ok else f"kernel.cu({line}): error: identifier \"x\" is undefined")
        if verdict == "ok":
            score = float(rest[0])
            return Evaluation(task=spec.name, precision=precision, verdict=Verdict.OK, sizes=self.sizes(score),
                              score=score, compile=compiled, phases={"compile": 1.0, "check": 0.2, "time": 0.3})
        if verdict == "incorrect":
            mismatch = {"seed": 1, "output": "C", "index": 7, "expected": 1.0, "got": 0.0}
            return Evaluation(task=spec.name, precision=precision, verdict=Verdict.INCORRECT,
                              reason="C[7] = 0 but expected 1", sizes=self.sizes(None, False, mismatch),
                              compile=compiled)
        return Evaluation(task=spec.name, precision=precision, verdict=Verdict.COMPILE_ERROR,
                          reason="the candidate did not compile", compile=compiled)
