"""Build, on a machine without a GPU, the objects a GPU call would otherwise compile (docs/gpu-validation.md).

    python bench/prebuild.py [--candidates] [--baselines] [--cache .build/cache] [--jobs 2]

--candidates: every file of tests/gpu_candidates/ against its task, as the GPU tests and bench/gpu_candidates.py
evaluate it; --baselines: every task and precision of the library, as the baseline tests validate it (neither
flag: both). Nothing runs: a candidate is compiled only, a baseline's validation stops where it would need the GPU.
The objects land in the build cache (default .build/cache, the one bench/gpu_run.sh uses), so carrying
`.build/cache/objects` to a GPU host with the same nvcc cuts each test's build to a link. Prints one row per
build and a summary; exits 1 when something that should build did not.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testing.gpu_candidates import CANDIDATE_FILES, CASES, LIBRARY, expected_verdict, task_of  # noqa: E402
from worker.engine.results import Evaluation, Verdict  # noqa: E402
from worker.formats.cuda.evaluation import EvalOptions, evaluate, validate  # noqa: E402

# What a build that went as meant ends in: a compiled candidate (ok, kind compile_only), a baseline built and
# stopped for want of a GPU (or checked, on a GPU host).
BUILT = {Verdict.OK, Verdict.NO_GPU}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", action="store_true", help="the files of tests/gpu_candidates/")
    ap.add_argument("--baselines", action="store_true", help="every task and precision of the library")
    ap.add_argument("--cache", type=Path, default=Path(".build/cache"), help="the build cache (default .build/cache)")
    ap.add_argument("--jobs", type=int, default=2, help="builds side by side")
    ap.add_argument("--only", action="append", metavar="NAME", help="only these candidate files or task names")
    args = ap.parse_args(argv)
    both = not (args.candidates or args.baselines)
    options = EvalOptions(build_cache=str(args.cache.resolve()))
    wanted = set(args.only or ())

    def keep(name: str) -> bool:
        return not wanted or name in wanted

    # (name, precision, the build, the verdict the candidate is expected to get if any)
    work: list[tuple[str, str, Callable[[], Evaluation], str | None]] = []
    if args.candidates or both:
        for path in CANDIDATE_FILES:
            if keep(path.name):
                task, precision = task_of(path)
                work.append((path.name, precision, partial(evaluate, LIBRARY[task], precision,
                             path.read_text(encoding="utf-8"), None, options, compile_only=True),
                             expected_verdict(path)))
    if args.baselines or both:
        for spec, precision in CASES:
            if keep(spec.name):
                work.append((spec.name, precision, partial(validate, spec, precision, options), None))
    if not work:
        print("nothing to build (see --only)", file=sys.stderr)
        return 2

    def build(item):
        started = time.monotonic()
        return item[2](), time.monotonic() - started

    failed = 0
    started = time.monotonic()
    print(f"{'what':<40} {'prec':<5} {'result':<14} {'s':>6}  note")
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for (name, precision, _, expected), (ev, took) in zip(work, pool.map(build, work), strict=True):
            # A candidate meant to fail its build or the static checks has nothing to cache: that is its result.
            # (A candidate expected `incorrect` or the like must still compile: ok here.)
            ok = ev.verdict in BUILT or ev.verdict == expected
            failed += not ok
            note = "" if ok else ev.reason.splitlines()[0][:120] if ev.reason else "failed"
            print(f"{name:<40} {precision:<5} {ev.verdict:<14} {took:6.1f}  {note}", flush=True)
    objects = args.cache / "objects"
    count = sum(1 for _ in objects.iterdir()) if objects.is_dir() else 0
    print(f"{len(work)} built in {time.monotonic() - started:.0f} s, {failed} failed; {count} objects in {objects}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
