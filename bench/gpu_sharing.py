"""GPU sharing: several headless runs at once on one GPU, each LLM answer delayed.

    python3 bench/gpu_sharing.py --runs 4 --delay 5 [--profile filtered] [--rounds 2] [--task softmax ...]

Each run is `python -m worker optimize` with a demo script (demo/scripts) whose every answer waits
`--delay` seconds. Harness runs hold the per-GPU lock, LLM waits and compiles do not, so while one
run waits for its model another uses the GPU. Prints per run the GPU seconds (time holding the lock)
and the fraction of the wall time the GPU was busy: sum of lock-held time / wall.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--delay", type=float, default=5.0, help="seconds before each LLM answer")
    parser.add_argument("--task", action="append", help="demo tasks to cycle through (default: all three)")
    parser.add_argument("--profile", default="none", help="none | filtered | full (profiling holds the GPU too)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--debug-rounds", type=int, default=1)
    args = parser.parse_args()
    tasks = args.task or ["dot_product", "matrix_mul", "softmax"]
    work = Path(tempfile.mkdtemp(prefix="kw-sharing-"))
    procs = []
    start = time.monotonic()
    for i in range(args.runs):
        task = tasks[i % len(tasks)]
        script = json.loads((ROOT / "demo" / "scripts" / f"{task}_fp32_demo.json").read_text())
        for step in script["steps"]:
            step["delay_s"] = args.delay
        path = work / f"script-{i}.json"
        path.write_text(json.dumps(script))
        out = work / f"run-{i}.json"
        argv = [sys.executable, "-m", "worker", "optimize", "--task", task, "--llm", str(path),
                "--rounds", str(args.rounds), "--debug-rounds", str(args.debug_rounds), "--profile", args.profile,
                "--out", str(out)]
        log = open(work / f"run-{i}.log", "w")  # noqa: SIM115 - closed below
        procs.append((task, out, log, subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=log)))
    for *_, log, proc in procs:
        proc.wait()
        log.close()
    wall = time.monotonic() - start
    busy = 0.0
    print(f"{'run':<4} {'task':<12} {'status':<10} {'wall s':>7} {'GPU s':>7} {'LLM s':>7}")
    for i, (task, out, _, _proc) in enumerate(procs):
        if not out.exists():
            print(f"{i:<4} {task:<12} {'crashed':<10} (see {work}/run-{i}.log)")
            continue
        result = json.loads(out.read_text())["result"]
        busy += result["gpu_seconds"]
        print(f"{i:<4} {task:<12} {result['status']:<10} {result['wall_seconds']:>7.1f} "
              f"{result['gpu_seconds']:>7.1f} {result['llm_seconds']:>7.1f}")
    print(f"{args.runs} runs, R={args.rounds} D={args.debug_rounds}, profile {args.profile}, "
          f"LLM delay {args.delay:.0f} s: wall {wall:.1f} s, GPU busy {busy:.1f} s "
          f"= {busy / wall:.0%} of wall time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
