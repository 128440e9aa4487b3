"""Timing repeatability of the C/CUDA harness, alone per call and in the protocol under test (docs/benchmarks.md).

    python bench/repeatability.py [--task softmax ...] [--precision fp32] [--iters 50] [--json out.json]
                                  [--resume earlier.json] [--after batched|queued|interleaved|queued-interleaved]
                                  [--batch-below-ms MS] [--skip-before] [--after-arg=--FLAG=VALUE ...]

For every task (and precision) the baseline-only harness is built once; then, one process (or pair) after
another on an otherwise idle GPU, its baseline is timed in `time` mode as if it were a candidate:

- "before", the evaluator's default: each process alone, one launch per event pair. A first process is the
  reference every P is computed against (P_k = sum_i w_i * ref_i / t_k,i / sum_i w_i, w_i the size's
  complexity, as the scoring does), then two more;
- "after", twice, the protocol under test. `batched` (the default): the sizes whose reference call is under
  50 us timed in batches, the counts decided once from the reference (`--batch-fixed`), as the evaluator does
  with `batch_below_ms` (docs/evaluation.md, "Batching short calls"; `--batch-below-ms 0` times one call per
  sample). `queued`: the evaluator's queued protocol (`worker eval --queued-timing`): the reference timed queued,
  one call per sample, as the evaluator first times its baseline, and the batches decided from it; each sample's
  calls queued behind a spacer kernel (`--queued 1`, docs/evaluation.md, "Timing protocol"), so the host's launch
  latency and its wake-up from a synchronize between calls are not timed, and a size whose calls synchronize inside
  timed in spaced batches (each call behind its own flush and spacer; `--after-arg=--max-spaced
  --after-arg=1` times them one call per sample, the rule before 2026-11-29's twentieth session); a task whose
  reference call synchronizes more than once is timed in two `queued-interleaved` pairs, as the evaluator times
  it beside its baseline (a baseline whose object queues work the queued sample's wrappers cannot see is timed
  synchronized instead, as the evaluator does, and the run says so).
  `interleaved`: a pair of processes timing at once and taking turns on the GPU, one as the candidate and one as
  the baseline, P from the pair's own two sides (docs/evaluation.md, "Interleaved timing"), both on one CPU.
  `queued-interleaved`: every task in such pairs, with queued samples and the batches decided from the reference
  (`worker eval --queued-timing --interleave`), so the host work in a call meets the same host speed on both sides.

--skip-before times only the reference and the two "after" runs (three processes per task instead of five): the
"before" columns then read n/a.

repeat = |P_1 / P_2 - 1| between the two runs of a protocol. Per size it prints the call's time, the CV (the
worse of the protocol's runs, both sides of a pair) and the harness's empty call (a launch and a synchronize, the
floor under every time); per task also the empty call of each "after" process, host work that moves with the
host's own speed, and the summary names the misses whose two processes' empty calls lay 5 % or more apart (the host
ran at another speed: bench/host_speed.py, docs/benchmarks.md "The host's speed between processes"). The goals
(issue 17): P within 2 % for at least 95 % of the tasks; CV under 2 % wherever a call takes 10 us or more.
bench/cv_anatomy.py reads the --json and says what each size's CV over 2 % is made of (slow samples, drift, spread).
Every process (or pair) runs under the evaluator's clock watch (worker/engine/clock.py): the --json keeps what
the GPU's clock did ("clock"), and the output names each task whose GPU slowed itself down (power cap, thermal)
while it was timed; unlike the evaluator, this script does not time such a process again.
Without a GPU it only builds (and prints the tables of the resumed tasks).

--resume takes the --json of an earlier run cut short (a time limit), or several (one per shard of a multi-GPU run:
`--resume a.json --resume b.json --task none` prints their tables together): its tasks are not built or timed again,
and their timings stay in the --json written and in every table and summary line, beside the new ones.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.host_speed import no_aslr  # noqa: E402
from worker.engine import toolchain as tc  # noqa: E402
from worker.engine.clock import ClockWatch  # noqa: E402
from worker.engine.harness import harness_argv, read_result, run_interleaved  # noqa: E402
from worker.engine.results import TimingStats  # noqa: E402
from worker.engine.sandbox import run as run_sandboxed  # noqa: E402
from worker.engine.taskspec import PRECISIONS  # noqa: E402
from worker.engine.timing import BATCH_BELOW_MS, batches_for, syncs_per_call  # noqa: E402
from worker.formats.cuda.build import build, default_cache_dir  # noqa: E402
from worker.registry import discover_tasks  # noqa: E402

TASKS = Path(__file__).resolve().parents[1] / "tasks"
NA = float("nan")  # a "before" figure of a --skip-before run
META = ("floor", "clock")  # a run's entries that are not a size: its empty call, the GPU's clock while it ran
WATCHED: list[int | str | None] = [None]  # the GPU whose clock main() watches during every process


def _timings(data: dict | None, tag: str, stderr: str) -> dict | None:
    if not data or data.get("error"):
        print(f"  {tag}: failed: {(data or {}).get('error') or stderr[-300:]}", file=sys.stderr)
        return None
    times = {int(s["index"]): s["timing"] for s in data["sizes"]}
    times["floor"] = (data.get("empty_call") or {}).get("median_ms")
    return times


def time_once(exe: str, spec, precision: str, work: Path, iters: int, tag: str, extra: tuple[str, ...] = ()
              ) -> dict | None:
    """The baseline timed alone: {size index: timing, "floor": the empty call's median, ms}."""
    out = work / f"{tag}.json"
    out.unlink(missing_ok=True)
    argv = harness_argv(exe, spec, precision, "time", "baseline", [dict(s) for s in spec.sizes], str(out), iters=iters)
    with ClockWatch(WATCHED[0]) as watch:
        res = run_sandboxed([*argv[:-2], *extra, *argv[-2:]], work, 900, name=tag)
    return _clocked(_timings(read_result(out) if out.is_file() else None, tag, res.stderr), watch)


def _clocked(times: dict | None, watch: ClockWatch) -> dict | None:
    """The timings with what the GPU's clock did meanwhile (worker/engine/clock.py), where it was read."""
    if times is not None and watch.report is not None:
        times["clock"] = watch.report.to_dict()
    return times


def time_pair(exe: str, spec, precision: str, work: Path, iters: int, tag: str, batches: list[int] | None = None,
              queued: bool = False, extra: tuple[str, ...] = ()) -> dict | None:
    """The baseline timed as a candidate beside itself, interleaved: {"candidate": ..., "baseline": ...}."""
    with ClockWatch(WATCHED[0]) as watch:
        pair = run_interleaved(exe, exe, spec, precision, [dict(s) for s in spec.sizes], work / f"{tag}-candidate",
                               work / f"{tag}-baseline", 1800, candidate_impl="baseline", iters=iters,
                               batches=batches, queued=queued, extra=extra)
    sides = {"candidate": _clocked(_timings(pair.candidate.data, tag, pair.candidate.result.stderr), watch),
             "baseline": _timings(pair.reference.data, tag, pair.reference.result.stderr)}
    return sides if all(sides.values()) else None


PAIRED = ("interleaved", "queued-interleaved")  # the "after" protocols timed as a pair, P from its own two sides
HOST_MOVED = 0.05  # two processes' empty calls this far apart: the host ran at another speed (bench/host_speed.py)


def _clock_of(run: dict) -> dict | None:
    """A process's clock report; a pair's is kept on its candidate side (time_pair)."""
    return run.get("clock") or (run.get("candidate") or {}).get("clock")


def slowed_runs(runs: dict) -> list[str]:
    """"after-1 (software power cap, 1455 MHz of 1980)" for every process whose clock watch saw a slowdown
    (worker/engine/clock.py)."""
    said = []
    for tag, run in runs.items():
        clock = _clock_of(run) if isinstance(run, dict) else None
        if clock and clock["slowed"]:
            low = clock.get("slowed_min_mhz") or clock["sm_min_mhz"]  # the lowest slowed clock; older JSONs lack it
            said.append(f"{tag} ({', '.join(clock['reasons'])}, {low} MHz of {clock['max_mhz']})")
    return said


def slowed_note(runs: dict) -> str:
    said = slowed_runs(runs)
    return f"; the GPU slowed itself down in {', '.join(said)}" if said else ""


def clock_summary(saved: list[dict]) -> str:
    """How many processes had their GPU clock read, and each task whose clock slowed down (slowed_runs)."""
    clocks = [_clock_of(run) for entry in saved for run in entry["runs"].values() if isinstance(run, dict)]
    slowed = [f"{e['task']}[{e['precision']}] in {', '.join(said)}" for e in saved if (said := slowed_runs(e["runs"]))]
    return (f"the GPU's clock was read during {sum(1 for c in clocks if c)} of {len(clocks)} processes (or pairs); "
            f"it slowed itself down during {len(slowed)} tasks' runs{': ' if slowed else ''}{'; '.join(slowed)}")


def host_moved(hosts: tuple[float, float]) -> bool:
    a, b = hosts
    return not (math.isnan(a) or math.isnan(b)) and max(a, b) / min(a, b) - 1 >= HOST_MOVED


def pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x * 100:.2f}%"


def p_of(spec, run: dict, ref: dict) -> float:
    weights = [spec.complexity_of(s) for s in spec.sizes]
    speedups = [ref[i]["mean_ms"] / run[i]["mean_ms"] for i in range(len(spec.sizes))]
    return sum(w * s for w, s in zip(weights, speedups, strict=True)) / sum(weights)


def p_of_pair(spec, pair: dict) -> float:
    return p_of(spec, pair["candidate"], pair["baseline"])


def load_saved(path: str) -> list[dict]:
    """The entries of an earlier --json, with each run's size indices back to integers (JSON keys are strings)."""
    entries = json.loads(Path(path).read_text())
    def keyed(run: dict) -> dict:
        return {k if k in META else int(k): t for k, t in run.items()}

    for entry in entries:
        paired = entry["runs"].get("protocol") in PAIRED
        entry["runs"] = {tag: run if tag == "protocol" else {side: keyed(r) for side, r in run.items()}
                         if paired and tag.startswith("after") else keyed(run) for tag, run in entry["runs"].items()}
    return entries


def reference_times(reference: dict) -> dict[int, TimingStats]:
    """The reference run's per-size timings (its empty call and clock left out)."""
    return {i: TimingStats.from_dict(t) for i, t in reference.items() if i not in META}


def after_flags(ref: dict[int, TimingStats], sizes: int, after: str, batch_below_ms: float) -> tuple[str, ...]:
    """kwbench's flags for the "after" runs: the evaluator's batches, decided once from the reference's per-call
    times (none with batch_below_ms 0), and queued samples for --after queued."""
    batches = batches_for(ref, sizes, batch_below_ms)
    fixed = ("--batch-fixed", ",".join(map(str, batches))) if any(b > 1 for b in batches) else ()
    return fixed + (("--queued", "1") if after == "queued" else ())


def summarize(spec, precision: str, runs: dict) -> tuple[tuple, list[tuple]]:
    """One task's row (P repeat before and after) and its rows per size (call time, empty call, worse CV of each)."""
    ref = runs["reference"]
    solo = [runs[tag] for tag in ("before-1", "before-2") if tag in runs]  # none with --skip-before
    if runs.get("protocol") in PAIRED:
        after = abs(p_of_pair(spec, runs["after-1"]) / p_of_pair(spec, runs["after-2"]) - 1)
        paired = [r[side] for r in (runs["after-1"], runs["after-2"]) for side in ("candidate", "baseline")]
        afters = paired[0::2]  # each pair's candidate side
    else:
        after = abs(p_of(spec, runs["after-1"], ref) / p_of(spec, runs["after-2"], ref) - 1)
        afters = paired = [runs["after-1"], runs["after-2"]]
    repeat = {"before": abs(p_of(spec, solo[0], ref) / p_of(spec, solo[1], ref) - 1) if solo else NA, "after": after}
    # The empty call (a launch and a synchronize) of each "after" process: host work that moves with the host's
    # own speed (bench/host_speed.py's round trip), so a P that moved with it moved with the host.
    hosts = tuple((r.get("floor") or NA) * 1000 for r in afters)
    floors = [r.get("floor") for r in solo + paired if r.get("floor")]
    sizes_rows = []
    for i, size in enumerate(spec.sizes):
        sizes_rows.append((spec.name, precision, ", ".join(f"{k}={v:g}" for k, v in size.items()),
                           ref[i]["mean_ms"] * 1000, (min(floors) * 1000) if floors else float("nan"),
                           max(r[i]["cv"] for r in solo) if solo else NA, max(r[i]["cv"] for r in paired)))
    return (spec.name, precision, repeat["before"], repeat["after"], hosts), sizes_rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", action="append", help="only these operators (repeatable)")
    parser.add_argument("--precision", choices=PRECISIONS)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--after", choices=("batched", "queued", "interleaved", "queued-interleaved"),
                        default="batched", help="what the 'after' runs measure (default: batched)")
    parser.add_argument("--batch-below-ms", type=float, default=BATCH_BELOW_MS,
                        help=f"the after runs batch calls shorter than this (default {BATCH_BELOW_MS}, the "
                             "evaluator's; 0: one call per sample)")
    parser.add_argument("--after-arg", action="append", default=[], metavar="ARG",
                        help="one more kwbench argument of the after runs, alone or in pairs (repeatable; e.g. "
                             "--after-arg=--l2-flush-mode --after-arg=read); the JSON keeps them per task")
    parser.add_argument("--skip-before", action="store_true",
                        help="time only the reference and the two after runs (the before columns read n/a)")
    parser.add_argument("--json", help="write every timing here")
    parser.add_argument("--resume", action="append", default=[],
                        help="an earlier --json: its tasks are kept (tables included), not timed again (repeatable: "
                             "the JSONs of several shards)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel builds")
    parser.add_argument("--no-aslr", action="store_true",
                        help="every timing process without address-space randomization (personality "
                             "ADDR_NO_RANDOMIZE, inherited by the children): one address layout for all")
    args = parser.parse_args(argv)
    if args.no_aslr:
        no_aslr()

    all_specs = {s.name: s for s in discover_tasks(TASKS, backends=("cuda",)).specs}
    specs = [s for s in all_specs.values() if not args.task or s.name in args.task]
    precisions = [args.precision] if args.precision else list(PRECISIONS)
    saved = []  # every timed task, the resumed ones first
    for entry in [e for path in args.resume for e in load_saved(path)]:
        if entry["task"] in all_specs:
            saved.append(entry)
        else:
            print(f"  resumed {entry['task']}[{entry['precision']}]: no such task now; dropped", file=sys.stderr)
    done = {(e["task"], e["precision"]) for e in saved}
    cases = [(s, p) for s in specs for p in precisions if p in s.interfaces and (s.name, p) not in done]
    chain = tc.detect()
    resumed = f" ({len(saved)} more resumed from {', '.join(args.resume)})" if args.resume else ""
    print(f"{len(cases)} tasks{resumed}; "
          f"GPU: {chain.gpu.name if chain.gpu else 'none (' + chain.gpu_reason + ')'}; "
          f"{args.iters} timed calls per size", flush=True)
    WATCHED[0] = chain.gpu.smi_id if chain.gpu else None
    root = Path(tempfile.mkdtemp(prefix="kw-repeat-"))
    exes, unordered = {}, {}

    def build_one(case):
        spec, precision = case
        return case, build(spec, precision, chain, None, work_dir=root / f"{spec.name}-{precision}",
                           cache_dir=os.environ.get("KW_BUILD_CACHE") or default_cache_dir())

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # builds in parallel; timing below is serial
        for (spec, precision), built in pool.map(build_one, cases):
            if not built.ok:
                print(f"  build failed: {spec.name}[{precision}]", file=sys.stderr)
                continue
            exes[(spec.name, precision)] = built.executable
            unordered[(spec.name, precision)] = built.unordered
    print(f"built {len(exes)} of {len(cases)}")
    if chain.gpu is None and not saved:
        return 0

    started, timed = time.monotonic(), 0
    for spec, precision in cases if chain.gpu else []:  # without a GPU, only the resumed tasks' tables
        exe = exes.get((spec.name, precision))
        if exe is None:
            continue
        work = root / f"{spec.name}-{precision}"
        # As the evaluator does: a baseline a queued sample cannot time (objcheck.unordered_work) is timed
        # synchronized.
        queued = args.after in ("queued", "queued-interleaved") and not unordered[(spec.name, precision)]
        if args.after in ("queued", "queued-interleaved") and not queued:
            print(f"  {spec.name}[{precision}]: synchronized, not queued: the baseline uses "
                  f"{', '.join(unordered[(spec.name, precision)])}", flush=True)
        # --after queued: the reference is timed as the evaluator's cached baseline is, queued and one call per
        # sample, so that its synchronizes per call decide the pairing as they do there.
        ref_flags = ("--queued", "1") if queued and args.after == "queued" else ()
        runs = {"reference": time_once(exe, spec, precision, work, args.iters, "reference", ref_flags)}
        runs |= {tag: time_once(exe, spec, precision, work, args.iters, tag)
                 for tag in (() if args.skip_before else ("before-1", "before-2"))}
        protocol = args.after
        extra = tuple(args.after_arg)
        if args.after == "interleaved":
            runs |= {tag: time_pair(exe, spec, precision, work, args.iters, tag, extra=extra)
                     for tag in ("after-1", "after-2")}
        elif runs["reference"] is not None:
            ref = reference_times(runs["reference"])
            trips = syncs_per_call(ref)
            if args.after == "queued" and trips > 1:
                protocol = "queued-interleaved"
                print(f"  {spec.name}[{precision}]: timed in pairs, as the evaluator does: the call synchronizes "
                      f"{trips:.3g} times", flush=True)
            if protocol == "queued-interleaved":
                batches = batches_for(ref, len(spec.sizes), args.batch_below_ms)
                runs |= {tag: time_pair(exe, spec, precision, work, args.iters, tag, batches, queued, extra)
                         for tag in ("after-1", "after-2")}
            else:
                fixed = after_flags(ref, len(spec.sizes), "queued" if queued else "batched",
                                    args.batch_below_ms) + extra
                runs |= {tag: time_once(exe, spec, precision, work, args.iters, tag, fixed)
                         for tag in ("after-1", "after-2")}
        runs["protocol"] = protocol
        if any(r is None for r in runs.values()):
            continue
        # What the after runs were given beyond the protocol, so a JSON says which experiment it holds.
        saved.append({"task": spec.name, "precision": precision, "runs": runs, "after_args": list(extra)})
        timed += 1
        if args.json:  # after every task: a run cut short keeps what it timed
            Path(args.json).write_text(json.dumps(saved, indent=1))
        (_, _, before, after, _), _ = summarize(spec, precision, runs)
        print(f"  {spec.name}[{precision}]: P repeat {pct(before)} -> {pct(after)}{slowed_note(runs)}", flush=True)
    print(f"timed {timed} tasks in {time.monotonic() - started:.0f} s; {len(saved)} in the tables below")
    print(clock_summary(saved))

    rows, sizes_rows = [], []  # from every saved task, resumed and new
    for entry in saved:
        row, per_size = summarize(all_specs[entry["task"]], entry["precision"], entry["runs"])
        rows.append(row)
        sizes_rows += per_size
    print("\n| task | prec | size | call (us) | empty call (us) | CV before | CV after |")
    print("|---|---|---|---|---|---|---|")
    for name, prec, size, us, floor, before, after in sizes_rows:
        print(f"| {name} | {prec} | {size} | {us:.1f} | {floor:.1f} | {pct(before)} | {pct(after)} |")
    print("\n| task | prec | sizes | call (us) | P repeat before | P repeat after | "
          "sizes >= 10 us with CV >= 2 %, before | after | empty call of the after runs (us) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, prec, before, after, hosts in rows:
        mine = [r for r in sizes_rows if r[0] == name and r[1] == prec]
        long_calls = [r for r in mine if r[3] >= 10]
        calls = f"{min(r[3] for r in mine):.1f} - {max(r[3] for r in mine):.1f}"
        counts = [f"{sum(1 for r in long_calls if r[col] >= 0.02)} of {len(long_calls)}"
                  if not any(math.isnan(r[col]) for r in long_calls) else "n/a" for col in (5, 6)]
        print(f"| {name} | {prec} | {len(mine)} | {calls} | {pct(before)} | {pct(after)} | "
              f"{counts[0]} | {counts[1]} | {hosts[0]:.2f} / {hosts[1]:.2f} |")
    groups = sorted({r[1] for r in rows}, key=list(PRECISIONS).index)
    for group in groups + (["all"] if len(groups) > 1 else []):  # each precision, then both together
        these = [r for r in rows if group in ("all", r[1])]
        label = "" if len(groups) == 1 else f"{group} "
        for k, col in (("before", 2), ("after", 3)):
            if any(math.isnan(r[col]) for r in these):
                continue  # --skip-before
            within = sum(1 for r in these if r[col] <= 0.02)
            print(f"{label}{k}: P within 2 % for {within} of {len(these)} tasks ({within / len(these) * 100:.0f} %)")
        misses = [r for r in these if r[3] > 0.02]
        moved = [r[0] for r in misses if host_moved(r[4])]
        if misses:
            print(f"{label}after: {len(moved)} of the {len(misses)} misses had the host's speed move between their "
                  f"two processes (empty call {HOST_MOVED * 100:.0f} % or more apart){': ' if moved else ''}"
                  f"{', '.join(moved)}")
        long_calls = [r for r in sizes_rows if r[3] >= 10 and group in ("all", r[1])]
        for k, col in (("before", 5), ("after", 6)):
            if any(math.isnan(r[col]) for r in long_calls):
                continue
            over = [r for r in long_calls if r[col] >= 0.02]
            print(f"{label}{k}: CV of 2 % or more at {len(over)} of {len(long_calls)} sizes whose call takes 10 us "
                  "or more")
    if args.json:
        Path(args.json).write_text(json.dumps(saved, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
