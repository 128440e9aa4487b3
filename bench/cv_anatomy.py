"""Where a timing CV comes from: the samples of a bench/repeatability.py --json, size by size (docs/benchmarks.md).

    python bench/cv_anatomy.py repeatability.json [more.json ...] [--min-us 10] [--sizes]

repeatability.py counts the sizes whose CV (std / mean over one process's samples) is 2 % or more. A CV says how
wide the samples lie, not why; this script reads each "after" process's samples (`samples_ms`, in the order they
were taken; both sides of a pair) at every size whose reference call takes --min-us or more, and sorts the sizes
whose CV is 2 % or more by what their samples show:

- "slow samples": a few samples far above the rest (beyond the median plus 4 robust sigmas, sigma = IQR / 1.349)
  carry the CV; without them it is under 2 %. Something took the GPU or the host away for those samples.
- "alternating": consecutive samples take turns high and low (lag-1 autocorrelation -0.5 or below): something
  that changes with the sample's parity, not noise.
- "drift": the samples move slowly through the run: the median of the last third lies 2 % or more from the first
  third's. A clock or state that changes over seconds.
- "spread": none of these; the samples themselves are wide (robust CV = IQR / 1.349 / median is printed beside it).

A size is counted once, by the worst of its processes. Without --sizes only the per-task table and the summary.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GOAL = 0.02  # issue 17: CV under 2 % wherever the call takes 10 us or more
FENCE = 4.0  # robust sigmas above the median that make a sample "slow"
ALTERNATING = -0.5  # lag-1 autocorrelation at or below which consecutive samples take turns
KINDS = ("slow samples", "alternating", "drift", "spread")  # what a CV over the goal is made of, tried in this order


@dataclass(frozen=True)
class Anatomy:
    cv: float
    robust_cv: float  # IQR / 1.349 / median: the width of the bulk of the samples
    cv_without_slow: float
    slow: int  # samples beyond the fence
    drift: float  # median of the last third / median of the first third - 1
    lag1: float  # autocorrelation of consecutive samples: near -1 when they take turns high and low

    @property
    def kind(self) -> str:
        if self.cv < GOAL:
            return "ok"
        if self.slow and self.cv_without_slow < GOAL:
            return "slow samples"
        if self.lag1 <= ALTERNATING:
            return "alternating"
        return "drift" if abs(self.drift) >= GOAL else "spread"


def anatomy(samples: list[float]) -> Anatomy:
    x = np.asarray(samples, dtype=float)
    mean, median = x.mean(), float(np.median(x))
    cv = float(x.std(ddof=1) / mean) if len(x) > 1 and mean > 0 else 0.0
    q1, q3 = np.percentile(x, [25, 75])
    sigma = (q3 - q1) / 1.349
    kept = x[x <= median + FENCE * max(sigma, 1e-3 * median)]
    third = max(1, len(x) // 3)
    dev = x - mean
    power = float((dev * dev).sum())
    return Anatomy(cv=cv, robust_cv=float(sigma / median) if median > 0 else 0.0,
                   cv_without_slow=float(kept.std(ddof=1) / kept.mean()) if len(kept) > 1 else 0.0,
                   slow=int(len(x) - len(kept)),
                   drift=float(np.median(x[-third:]) / np.median(x[:third]) - 1),
                   lag1=float((dev[:-1] * dev[1:]).sum() / power) if power > 0 else 0.0)


def processes(runs: dict) -> list[dict]:
    """Every "after" process's timings: a run alone, or both sides of a pair."""
    out = []
    for tag in ("after-1", "after-2"):
        run = runs.get(tag) or {}
        out += [run[side] for side in ("candidate", "baseline")] if "candidate" in run else [run]
    return out


def sizes_of(entry: dict, min_us: float) -> list[tuple[int, float, Anatomy]]:
    """(size index, reference call in us, the worst process's anatomy) for every size of min_us or more."""
    ref = entry["runs"]["reference"]
    rows = []
    for key, timing in ref.items():
        if key in ("floor", "clock") or timing["mean_ms"] * 1000 < min_us:
            continue
        found = [anatomy(p[key]["samples_ms"]) for p in processes(entry["runs"]) if p.get(key, {}).get("samples_ms")]
        if found:
            rows.append((int(key), timing["mean_ms"] * 1000, max(found, key=lambda a: a.cv)))
    return sorted(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", nargs="+", help="bench/repeatability.py --json output (several: one per shard)")
    parser.add_argument("--min-us", type=float, default=10.0, help="sizes whose reference call takes this or more")
    parser.add_argument("--sizes", action="store_true", help="also one row per size whose CV is 2 %% or more")
    args = parser.parse_args(argv)
    entries = [e for path in args.json for e in json.loads(Path(path).read_text())]
    totals = dict.fromkeys(("sizes", "over", *KINDS), 0)
    task_rows, size_rows = [], []
    for entry in entries:
        rows = sizes_of(entry, args.min_us)
        if not rows:
            continue
        over = [r for r in rows if r[2].kind != "ok"]
        counts = {k: sum(1 for r in over if r[2].kind == k) for k in KINDS}
        totals["sizes"] += len(rows)
        totals["over"] += len(over)
        for k in KINDS:
            totals[k] += counts[k]
        worst = max(rows, key=lambda r: r[2].cv)[2]
        task_rows.append((entry["task"], entry["precision"], len(rows), len(over), counts, worst))
        size_rows += [(entry["task"], entry["precision"], i, us, a) for i, us, a in over]
    if not task_rows:
        print(f"no size of {args.min_us:g} us or more with samples in {', '.join(args.json)}", file=sys.stderr)
        return 1
    if args.sizes:
        print("| task | prec | size | call (us) | CV | robust CV | CV without slow samples | slow samples | lag-1 "
              "| drift | kind |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for task, prec, i, us, a in size_rows:
            print(f"| {task} | {prec} | {i} | {us:.1f} | {a.cv:.2%} | {a.robust_cv:.2%} | {a.cv_without_slow:.2%} | "
                  f"{a.slow} | {a.lag1:+.2f} | {a.drift:+.2%} | {a.kind} |")
        print()
    print(f"| task | prec | sizes >= {args.min_us:g} us | CV >= 2 % | slow samples | alternating | drift | spread | "
          "worst CV | its robust CV |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for task, prec, n, over, counts, worst in task_rows:
        print(f"| {task} | {prec} | {n} | {over} | " + " | ".join(str(counts[k]) for k in KINDS) +
              f" | {worst.cv:.2%} | {worst.robust_cv:.2%} |")
    print(f"\nCV of 2 % or more at {totals['over']} of {totals['sizes']} sizes of {args.min_us:g} us or more: "
          + ", ".join(f"{totals[k]} {k}" for k in KINDS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
