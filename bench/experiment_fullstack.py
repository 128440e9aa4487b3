"""The 12-task demo experiment for real on one GPU host: 12 MSKernelBench tasks (vector_add, RELU, dot_product,
rms_norm, matrix_transpose, prefix_sum in FP32 and BF16), the scripted LLM of demo/experiment/script.json,
R=1, D=1, one seed, through the whole stack, as a user would drive it.

    python3 bench/experiment_fullstack.py --out DIR [--profile-mode none] [--variant-profile-mode filtered]

From nothing in a temporary KERNELWEB_VAR_DIR: migrate, sync_tasks, a user, the scripted OpenAI-compatible
LLM (the GPU host reaches no real endpoint), daphne, one `celery worker -Q kernelweb,gpu --concurrency 2` on
the embedded broker, an endpoint row. Then through the API: a token, the task ids, POST /api/experiments/,
its progress polled until every run has ended (one line per change), the analyses for FP32, BF16 and all
(cumulative success rate, fast_p, geometric-mean speedup, per operator, cost, bottleneck migration) printed
as tables and written with the pages' CSV downloads and SVG charts, each run's turns checked against what
the script expects, and the experiment exported (`manage.py export_experiment`: experiment.json and one
trajectory per run) for `manage.py import_experiment` on another machine.

Profiling. With `filtered` profiling every evaluation runs Nsight Compute once per size (about 14 s an
evaluation on an H100, 20 s for the 1 GiB transposes): the 12 runs need about 420 s of GPU time under the
GPU lock, more than fits beside the stack's start-up in a 9-minute device call. So the experiment runs with
`--profile-mode none` (the configuration of the CI variant, tests/web/test_experiments_e2e.py; about 2 minutes)
and, in the time left before `--deadline`, a variant with `filtered` profiling over the operators of
`--variant-operators` (default dot_product, rms_norm, prefix_sum: 6 runs, about 170 s of GPU time) gives
the bottleneck classes and an ablation table of the two (/api/experiments/compare/). The variant is launched
only when `--variant-min-seconds` remain, and cancelled at the deadline; the exit status depends on the main
experiment only: 0 when all its runs ended and succeeded, 1 otherwise.

Costs: the scripted model is priced like GPT-4.1 (--price-in 2, --price-out 8 USD per 1M tokens, through
LLM_PRICES_FILE), so the cost tables are not all zero; the token counts are the script's.

`--simulated-gpu` is a dry run on a machine without a GPU: the Celery worker loads
testing/experiment_gpu.py (a simulated H100 and the expected verdicts in place of the engine).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fullstack import api  # noqa: E402 - the same API helper as the single-run full-stack bench

SCRIPT = ROOT / "demo" / "experiment" / "script.json"
# What a visitor of the experiment's page reads (also in the recorded demo/experiments/*/experiment.json).
DESCRIPTION = (
    "A demonstration recorded on one GPU: six MSKernelBench operators (vector_add, RELU, dot_product, rms_norm, "
    "matrix_transpose, prefix_sum) in FP32 and BF16, one run each with one round and one debug round. The agents' "
    "answers are scripted (demo/experiment/script.json) and the kernels hand-written; compiling, checking and "
    "timing are real. vector_add BF16 and prefix_sum FP32 are fixed in their debug round; dot_product BF16 never "
    "gets a correct kernel.")


def variant_description(operators: list[str], profile_mode: str) -> str:
    return (f"The same scripted runs of {', '.join(operators)} in FP32 and BF16, with Nsight Compute profiling "
            f"({profile_mode}): the bottleneck classes of baselines and candidates, and an ablation against the "
            "experiment without profiling.")
SUITE = "mskernelbench"
PRECISIONS = ("all", "fp32", "bf16")
TABLES = ("success_curve", "fast_p", "geomean_speedup", "operators", "library_comparison", "cost",
          "bottleneck_migration", "outcomes")
CHARTS = ("success_curve", "fast_p", "operators")
SHOWN = ("success_curve", "fast_p", "geomean_speedup", "operators", "cost", "bottleneck_migration")
TERMINAL = {"succeeded", "failed", "cancelled", "missing"}


class Clock:
    def __init__(self):
        self.start = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.start

    def say(self, text: str) -> None:
        print(f"[{self():6.1f} s] {text}", flush=True)


def call(base: str, path: str, token: str, data: dict | None = None) -> dict:
    """bench.fullstack.api, with the server's answer in the error when a request is refused."""
    try:
        return api(base, path, token, data)
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"{'POST' if data is not None else 'GET'} {path}: HTTP {exc.code}: "
                         f"{exc.read().decode(errors='replace')[:2000]}") from None


def fetch(base: str, path: str, session: str) -> bytes:
    """A page download (CSV, SVG) as the signed-in user."""
    request = urllib.request.Request(base + path, headers={"Cookie": f"sessionid={session}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read()


class Stack:
    """The processes of one GPU host: web server, Celery worker, scripted LLM servers."""

    def __init__(self, var: Path, env: dict[str, str]):
        self.var, self.env = var, env
        self.processes: list[tuple[str, subprocess.Popen, object]] = []

    def manage(self, *argv: str, timeout: float = 300) -> str:
        done = subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        if done.returncode:
            raise SystemExit(f"manage.py {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    def spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.var / f"{name}.log", "w")  # noqa: SIM115 - closed in stop()
        self.processes.append((name, subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=log, stderr=log), log))

    def stop(self, logs: Path | None) -> None:
        for _name, process, _log in self.processes:
            process.terminate()
        for _name, process, log in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
            for name, _, _ in self.processes:
                shutil.copy(self.var / f"{name}.log", logs / f"{name}.log")


# ------------------------------------------------------------------------------------------------ printing


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ",".join(_cell(v) for v in value)
    return str(value)


def table_text(table: dict, columns: list[str] | None = None) -> str:
    columns = columns or table["columns"]
    rows = [[_cell(row.get(c)) for c in columns] for row in table["rows"]]
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def print_analyses(analyses: dict) -> None:
    print(f"\n=== analyses, precision {analyses['precision']}: {analyses['correct']} correct of "
          f"{analyses['trials']} trials", flush=True)
    tables = analyses["tables"]
    for name in SHOWN:
        table = tables.get(name)
        if table is None:
            continue
        columns = [c for c in table["columns"] if c not in ("task_id", "run_id", "speedups")]
        print(f"\n-- {name}\n{table_text(table, columns)}", flush=True)


# ------------------------------------------------------------------------------------------- experiment


def follow(base: str, token: str, experiment: int, clock: Clock, deadline: float, poll: float) -> tuple[bool, dict]:
    """Poll the experiment until no run is queued or running; one line per change. At the deadline, cancel
    what is left. (finished in time, last detail)"""
    seen: dict[str, tuple] = {}
    counts_seen = None
    cancelled_at = None
    while True:
        detail = call(base, f"/api/experiments/{experiment}/", token)
        progress = detail["progress"]
        for row in progress["rows"]:
            state = (row["status"], row["best_score"], row["attempt"])
            if seen.get(row["task_slug"]) != state:
                seen[row["task_slug"]] = state
                score = f"  best P {row['best_score']:.3f}" if row["best_score"] is not None else ""
                error = f"  ({row['error'][:120]})" if row["error"] else ""
                clock.say(f"experiment {experiment}: {row['task_slug']:<36} {row['status']:<9} run "
                          f"{row['run']}{score}{error}")
        counts = {k: v for k, v in progress["counts"].items() if v}
        if counts != counts_seen:
            counts_seen = counts
            clock.say(f"experiment {experiment}: {progress['done']}/{progress['total']} done {counts}")
        if not progress["is_active"]:
            return cancelled_at is None, detail
        if cancelled_at is None and clock() > deadline:
            cancelled = call(base, f"/api/experiments/{experiment}/cancel/", token, {})["cancelled"]
            cancelled_at = clock()
            clock.say(f"experiment {experiment}: deadline reached, {cancelled} runs cancelled")
        if cancelled_at is not None and clock() > cancelled_at + 30:
            clock.say(f"experiment {experiment}: runs still active 30 s after the cancel; giving up")
            return False, detail
        time.sleep(poll)


def turn_verdicts(base: str, token: str, run_id: int) -> list[dict]:
    turns = call(base, f"/api/runs/{run_id}/turns/?page_size=200", token)
    turns = turns["results"] if isinstance(turns, dict) else turns
    return sorted(turns, key=lambda t: (t["round_index"], t["debug_index"]))


def check_expectations(base: str, token: str, detail: dict, expected: dict[str, dict]) -> list[dict]:
    """Each run's candidate verdicts and best turn beside what the script expects."""
    rows = []
    for row in detail["progress"]["rows"]:
        want = expected.get(f"{row['operator']}/{row['precision']}")
        turns = turn_verdicts(base, token, row["run"]) if row["run"] else []
        got = [t["verdict"] for t in turns if (t["round_index"], t["debug_index"]) != (0, 0)]
        run = call(base, f"/api/runs/{row['run']}/", token) if row["run"] else {}
        verdicts_ok = want is not None and got == want["verdicts"]
        rows.append({
            "task": row["task_slug"], "status": row["status"], "expected_verdicts": want and want["verdicts"],
            "verdicts": got, "as_expected": bool(verdicts_ok and row["status"] == "succeeded"),
            "best_score": row["best_score"], "gpu": run.get("gpu_name"), "wall_time_s": run.get("wall_time_s"),
            "gpu_time_s": run.get("gpu_time_s"), "tokens": (run.get("tokens_in") or 0) + (run.get("tokens_out") or 0),
            "cost_usd": run.get("cost_usd"), "run": row["run"], "error": row["error"],
        })
    return rows


def record(base: str, token: str, session: str, stack: Stack, experiment: int, out: Path, clock: Clock) -> dict:
    """Analyses (printed, JSON), the pages' CSV and SVG downloads, and the exported experiment."""
    out.mkdir(parents=True, exist_ok=True)
    analyses = {}
    for precision in PRECISIONS:
        data = call(base, f"/api/experiments/{experiment}/analyses/?precision={precision}", token)
        analyses[precision] = data
        (out / f"analyses-{precision}.json").write_text(json.dumps(data, indent=1) + "\n")
        print_analyses(data)
        suffix = "" if precision == "all" else f"-{precision}"
        for name in TABLES:
            body = fetch(base, f"/experiments/{experiment}/export/{name}.csv?precision={precision}", session)
            (out / "csv").mkdir(exist_ok=True)
            (out / "csv" / f"experiment-{experiment}-{name}{suffix}.csv").write_bytes(body)
        for name in CHARTS:
            body = fetch(base, f"/experiments/{experiment}/charts/{name}.svg?precision={precision}", session)
            (out / "charts").mkdir(exist_ok=True)
            (out / "charts" / f"experiment-{experiment}-{name}{suffix}.svg").write_bytes(body)
    stack.manage("export_experiment", str(experiment), "--out", str(out / "bundle"))
    clock.say(f"experiment {experiment}: analyses, CSV, SVG and the exported runs in {out}")
    return analyses


def recap(summary: dict, out: Path) -> None:
    """The few lines worth reading first, at the end of the log."""
    main = summary.get("experiment", {})
    print(f"\n=== recap: experiment {main.get('id')} ({summary['profile_mode']} profiling), "
          f"{'finished' if main.get('finished') else 'NOT finished'} in {main.get('wall_s')} s, stack up in "
          f"{summary.get('stack_up_s')} s, {summary.get('nvidia_smi', 'simulated GPU')}")
    print(table_text({"columns": ["task", "status", "verdicts", "as_expected", "best_score", "gpu_time_s", "tokens"],
                      "rows": main.get("runs", [])}))
    for precision in PRECISIONS:
        path = out / "experiment" / f"analyses-{precision}.json"
        if path.is_file():
            tables = json.loads(path.read_text())["tables"]
            curve = [r for r in tables["success_curve"]["rows"] if r["precision"] == precision]
            rates = "  ".join(f"SR(>{r['tau']})={r['rate']:.2f}" for r in curve)
            fast = "  ".join(f"fast_{r['p']}={r['fast_p']:.2f}" for r in tables["fast_p"]["rows"])
            geo = tables["geomean_speedup"]["rows"][0]
            print(f"{precision:>4}: {rates}\n      {fast}  geomean {_cell(geo.get('geomean_speedup'))} over "
                  f"{geo.get('correct')} correct of {geo.get('trials')}")
    variant = summary.get("variant", {})
    if variant.get("id"):
        print(f"variant {variant['id']}: {'finished' if variant.get('finished') else 'NOT finished'} in "
              f"{variant.get('wall_s')} s, {variant.get('counts')}")
    elif variant:
        print(f"variant: skipped ({variant.get('skipped')})")


def launch(base: str, token: str, *, name: str, description: str, task_ids: list[int], endpoint: int,
           profile_mode: str, clock: Clock) -> int:
    body = {"name": name, "description": description, "tasks": task_ids, "endpoint": endpoint, "model": "scripted",
            "rounds": 1, "debug_rounds": 1, "profile_mode": profile_mode, "temperature": 0, "seeds": 1,
            "is_public": True}
    launched = call(base, "/api/experiments/", token, body)
    clock.say(f"experiment {launched['id']} launched through the API: {len(task_ids)} tasks, profile {profile_mode}, "
              f"R=1, D=1, 1 seed ({launched['selection']})")
    return launched["id"]


# ------------------------------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for the analyses, CSV, SVG, exported runs and logs")
    parser.add_argument("--script", default=str(SCRIPT))
    parser.add_argument("--profile-mode", default="none", choices=("none", "filtered", "full"))
    parser.add_argument("--variant-profile-mode", default="filtered", choices=("none", "filtered", "full", "off"),
                        help="the variant experiment's profile mode; off: no variant")
    parser.add_argument("--variant-operators", default="dot_product,rms_norm,prefix_sum",
                        help="comma-separated operators of the variant (FP32 and BF16 each)")
    parser.add_argument("--deadline", type=float, default=470,
                        help="seconds after start at which runs still going are cancelled")
    parser.add_argument("--variant-min-seconds", type=float, default=200,
                        help="launch the variant only if this much time remains before the deadline")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--poll", type=float, default=2.0)
    parser.add_argument("--price-in", type=float, default=2.0)
    parser.add_argument("--price-out", type=float, default=8.0)
    parser.add_argument("--simulated-gpu", action="store_true", help="dry run without a GPU (see above)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout`: stop the stack, keep the logs
    clock = Clock()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    script = json.loads(Path(args.script).read_text(encoding="utf-8"))
    expected = {f"{t['operator']}/{t['precision']}": t for t in script["tasks"]}

    var = Path(tempfile.mkdtemp(prefix="kw-experiment-"))
    prices = var / "prices.json"
    prices.write_text(json.dumps({"scripted": {"input": args.price_in, "output": args.price_out}}))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    # The scripted LLM listens on loopback, which endpoints may only use when allowed (apps/llm/ssrf.py).
    env.update(LLM_ENDPOINT_ALLOWED_HOSTS="127.0.0.1")
    env.update(KERNELWEB_VAR_DIR=str(var), PYTHONUNBUFFERED="1", EVENT_POLL_SECONDS="0.5", LLM_PRICES_FILE=str(prices),
               DJANGO_SUPERUSER_PASSWORD="experiment-pass-123", KW_TIMING_CACHE=str(var / "baseline-times"),
               KW_LOCK_DIR=str(var / "locks"))
    bin_dir = Path(sys.executable).parent
    celery = shutil.which("celery", path=str(bin_dir)) or shutil.which("celery") or "celery"
    daphne = shutil.which("daphne", path=str(bin_dir)) or shutil.which("daphne") or "daphne"
    stack = Stack(var, env)
    summary: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "deadline_s": args.deadline,
                     "profile_mode": args.profile_mode, "variant_profile_mode": args.variant_profile_mode,
                     "concurrency": args.concurrency, "simulated_gpu": args.simulated_gpu}
    status = 1
    try:
        if not args.simulated_gpu:
            query = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
            smi = subprocess.run(query, capture_output=True, text=True)
            summary["nvidia_smi"] = smi.stdout.strip()
            clock.say(f"GPU: {smi.stdout.strip() or smi.stderr.strip() or 'nvidia-smi failed'}")
        stack.manage("migrate", "--noinput")
        stack.manage("sync_tasks")
        stack.manage("createsuperuser", "--noinput", "--username", "experiment", "--email", "e@example.org")
        llm_ports = (args.port + 1, args.port + 2)  # one scripted server per experiment: each plays the script once
        for i, port in enumerate(llm_ports):
            stack.spawn(f"llm-{i + 1}", [sys.executable, "-m", "testing.scripted_llm", "--script", args.script,
                                        "--port", str(port)])
        stack.manage("shell", "-c", "from apps.llm.models import LLMEndpoint\n" + "".join(
            f"LLMEndpoint.objects.create(name='scripted-{i + 1}', base_url='http://127.0.0.1:{port}/v1', "
            "model_names=['scripted'])\n" for i, port in enumerate(llm_ports)))
        stack.spawn("web", [daphne, "-b", "127.0.0.1", "-p", str(args.port), "kernelweb.asgi:application"])
        worker = [celery, "-A", "kernelweb", "worker", "-Q", "kernelweb,gpu", "--concurrency", str(args.concurrency),
                  "--loglevel", "INFO"]
        if args.simulated_gpu:
            worker += ["--include", "testing.experiment_gpu"]
        stack.spawn("worker", worker)
        base = f"http://127.0.0.1:{args.port}"
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        summary["stack_up_s"] = round(clock(), 1)
        clock.say("stack up: migrate, sync_tasks, daphne, celery worker, scripted LLM servers")
        credentials = {"username": "experiment", "password": "experiment-pass-123"}
        token = call(base, "/api/auth/token/", None, credentials)["token"]
        session = stack.manage("shell", "-c", "from django.contrib.sessions.backends.db import SessionStore; "
                               "from django.contrib.auth.models import User; "
                               "u = User.objects.get(username='experiment'); "
                               "s = SessionStore(); s['_auth_user_id'] = str(u.pk); "
                               "s['_auth_user_backend'] = 'django.contrib.auth.backends.ModelBackend'; "
                               "s['_auth_user_hash'] = u.get_session_auth_hash(); s.create(); "
                               "print(s.session_key)").split()[-1]
        listed = call(base, f"/api/tasks/?suite={SUITE}&backend=cuda&page_size=200", token)["results"]
        ids = {f"{t['operator']}/{t['precision']}": t["id"] for t in listed if t["suite"] == SUITE}
        missing = [key for key in expected if key not in ids]
        if missing:
            raise SystemExit(f"tasks missing from the catalog: {', '.join(missing)}")
        endpoints = {e["name"]: e["id"] for e in call(base, "/api/endpoints/", token)["results"]}

        # The experiment.
        main_id = launch(base, token, name="12 tasks · scripted LLM · R1 D1", description=DESCRIPTION,
                         task_ids=[ids[key] for key in expected], endpoint=endpoints["scripted-1"],
                         profile_mode=args.profile_mode, clock=clock)
        started = clock()
        finished, detail = follow(base, token, main_id, clock, args.deadline, args.poll)
        summary["experiment"] = {"id": main_id, "finished": finished, "wall_s": round(clock() - started, 1),
                                 "counts": detail["progress"]["counts"]}
        rows = check_expectations(base, token, detail, expected)
        summary["experiment"]["runs"] = rows
        print("\n=== runs against the script's expectations")
        print(table_text({"columns": ["task", "status", "expected_verdicts", "verdicts", "as_expected", "best_score",
                                      "wall_time_s", "gpu_time_s", "tokens", "cost_usd"], "rows": rows}))
        summary["experiment"]["analyses"] = {p: {"trials": a["trials"], "correct": a["correct"]} for p, a in
                                             record(base, token, session, stack, main_id, out / "experiment",
                                                    clock).items()}
        all_succeeded = all(r["status"] == "succeeded" for r in rows)
        status = 0 if finished and all_succeeded else 1

        # The profiled variant, in the time left.
        operators = [op for op in args.variant_operators.split(",") if op]
        left = args.deadline - clock()
        if args.variant_profile_mode != "off" and operators and left >= args.variant_min_seconds:
            keys = [key for key in expected if key.split("/")[0] in operators]
            variant_id = launch(base, token, name=f"variant · profile {args.variant_profile_mode} · "
                                f"{len(keys)} tasks", description=variant_description(operators,
                                                                                      args.variant_profile_mode),
                                task_ids=[ids[key] for key in keys], endpoint=endpoints["scripted-2"],
                                profile_mode=args.variant_profile_mode, clock=clock)
            started = clock()
            v_finished, v_detail = follow(base, token, variant_id, clock, args.deadline, args.poll)
            summary["variant"] = {"id": variant_id, "finished": v_finished, "wall_s": round(clock() - started, 1),
                                  "counts": v_detail["progress"]["counts"],
                                  "runs": check_expectations(base, token, v_detail, expected)}
            if v_finished:
                analyses = record(base, token, session, stack, variant_id, out / "variant", clock)
                summary["variant"]["analyses"] = {p: {"trials": a["trials"], "correct": a["correct"]}
                                                  for p, a in analyses.items()}
                for precision in PRECISIONS:
                    compared = call(base, f"/api/experiments/compare/?ids={main_id},{variant_id}&precision="
                                          f"{precision}", token)
                    (out / f"ablation-{precision}.json").write_text(json.dumps(compared, indent=1) + "\n")
                    suffix = "" if precision == "all" else f"-{precision}"
                    (out / f"ablation{suffix}.csv").write_bytes(fetch(
                        base, f"/experiments/compare/export/ablation.csv?ids={main_id},{variant_id}"
                              f"&precision={precision}", session))
                    if precision == "all":
                        print(f"\n=== ablation, experiment {main_id} vs {variant_id} over the "
                              f"{compared['tasks']} tasks both cover\n{table_text(compared['tables']['ablation'])}")
            else:
                clock.say(f"variant {variant_id} did not finish before the deadline; not recorded")
        else:
            summary["variant"] = {"skipped": f"{left:.0f} s left before the deadline, "
                                             f"{args.variant_min_seconds:.0f} s needed"
                                  if args.variant_profile_mode != "off" else "off"}
            clock.say(f"variant skipped: {summary['variant']['skipped']}")
        summary["total_s"] = round(clock(), 1)
        recap(summary, out)
        verdict = "finished" if status == 0 else "DID NOT FINISH (or a run failed)"
        clock.say(f"experiment {main_id} {verdict}; total {summary['total_s']} s from an empty var dir")
        return status
    finally:
        stack.stop(out / "logs")
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")


if __name__ == "__main__":
    sys.exit(main())
