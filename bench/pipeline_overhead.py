"""Pipeline overhead from recorded trajectories: the share of a run's wall time spent outside
compiling, evaluating on the GPU (check, timing, profiling, memcheck) and waiting for the LLM.

    python3 bench/pipeline_overhead.py demo/trajectories/*.json

With a scripted LLM that answers at once, what remains is the pipeline's own cost: prompt building,
extraction, event emission, the sink. Goal: under 5% of wall time.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker.agents.trajectory import load  # noqa: E402


def main(paths: list[str]) -> int:
    print(f"{'trajectory':<36} {'turns':>5} {'wall s':>8} {'compile s':>9} {'GPU eval s':>10} {'LLM s':>7} "
          f"{'other s':>8} {'overhead':>8}")
    for path in paths:
        data = load(path)
        result = data["result"]
        phases = [t["evaluation"]["phases"] for t in data["turns"] if t.get("evaluation")]
        compile_s = sum(p.get("compile", 0.0) for p in phases)
        evaluation_s = sum(p.get("total", 0.0) for p in phases) - compile_s
        other = result["wall_seconds"] - compile_s - evaluation_s - result["llm_seconds"]
        print(f"{Path(path).name:<36} {result['turns']:>5} {result['wall_seconds']:>8.2f} {compile_s:>9.2f} "
              f"{evaluation_s:>10.2f} {result['llm_seconds']:>7.2f} {other:>8.2f} "
              f"{other / result['wall_seconds']:>8.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
