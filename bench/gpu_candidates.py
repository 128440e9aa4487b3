"""Evaluate candidate files against their tasks on the GPU and print one row each.

    python3 bench/gpu_candidates.py tests/gpu_candidates/*_fast.cu [--json out.json] [--iters 50]

The task and precision come from each file's header ("(vector_add FP32)"), as in the GPU tests.
Columns: verdict, P (complexity-weighted speedup, paper eq. 2), geometric-mean speedup, the
per-size speedup range, and review flags (>10x, CV > 5%).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testing.gpu_candidates import LIBRARY, expected_verdict, options_for, task_of  # noqa: E402
from worker.engine import toolchain as tc  # noqa: E402
from worker.formats.cuda.evaluation import EvalOptions, evaluate  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--json")
    parser.add_argument("--queued-timing", action="store_true", help="queued samples (docs/evaluation.md)")
    args = parser.parse_args()
    chain = tc.detect()
    if chain.gpu is None:
        print(f"no GPU here ({chain.gpu_reason})", file=sys.stderr)
        return 3
    options = EvalOptions(iters=args.iters, queued_timing=args.queued_timing)
    print(f"# GPU {chain.gpu.name}  nvcc {chain.nvcc_version}  iters {args.iters}")
    print(f"{'file':<28} {'task':<18} {'prec':<5} {'expected':<14} {'verdict':<14} {'P':>7} {'geomean':>8} "
          f"{'speedup range':>15}  flags")
    records = []
    for path in args.files:
        task, precision = task_of(path)
        ev = evaluate(LIBRARY[task], precision, path.read_text(encoding="utf-8"), None, options_for(path, options),
                      chain=chain)
        speedups = [s.speedup for s in ev.sizes if s.speedup]
        span = f"{min(speedups):.2f}-{max(speedups):.2f}" if speedups else "-"
        score = f"{ev.score:.2f}" if ev.score else "-"
        geo = f"{ev.geomean_speedup:.2f}" if ev.geomean_speedup else "-"
        print(f"{path.name:<28} {task:<18} {precision:<5} {expected_verdict(path) or '-':<14} {ev.verdict:<14} "
              f"{score:>7} {geo:>8} {span:>15}  {'; '.join(ev.flags)[:80]}", flush=True)
        if expected_verdict(path) not in (None, ev.verdict):  # what went otherwise than expected, in its words
            print(f"    {ev.reason[:600]}", flush=True)
        records.append({"file": path.name, **ev.to_dict()})
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
