#!/usr/bin/env python3
"""Two GPUs, twice the work? The demo experiment on 1 and then on N GPU workers of one host, and a worker
killed in the middle of a third pass: wall time, runs and busy fraction per GPU, overlapping holds of a GPU,
runs lost.

    python3 bench/multi_gpu.py --out DIR [--gpus 2] [--seeds 2] [--llm-delay 3]
           [--database-url postgres://…] [--redis-url redis://…]
    python3 bench/multi_gpu.py --out DIR --simulated-gpus   # dry run on a machine without a GPU

Each pass starts from an empty KERNELWEB_VAR_DIR (and an emptied database when --database-url is given):
migrate, sync_tasks, a user, the scripted LLM (demo/experiment/script.json, each answer after --llm-delay
seconds, as a real endpoint takes), daphne, and the GPU workers: `manage.py gpu_workers --gpu 0 … --gpu
N-1` on a GPU host (one Celery worker per GPU, pinned with CUDA_VISIBLE_DEVICES), or N Celery workers
with simulated GPUs (testing/experiment_gpu.py; each evaluation holds its GPU's real lock for
--simulated-gpu-seconds). The 12-task experiment × --seeds is launched through the API and followed to
its end. From the database and the GPU lock's hold log (KW_GPU_LOCK_LOG, worker/engine/gpu_lock.py):

- wall time of the experiment, and the speedup of N GPUs over one (goal: ≥ 1.8× with 2);
- runs per GPU (Run.gpu_uuid: the GPU each worker really used) and each GPU's busy fraction (time its
  lock was held / wall time);
- overlapping holds of one GPU's lock (must be 0: no two timings ever shared a GPU);
- the kill pass: once a third of the runs have ended, one worker is SIGKILLed; its runs must end in a
  visible state (failed with "worker lost" or re-run by the reconciler) and the other worker finishes the
  experiment: runs lost (neither ended nor running) must be 0.

Prints one table per question and writes summary.json. PostgreSQL and Redis are the production stack; without
--database-url/--redis-url the passes use SQLite and the embedded broker (the summary says which).
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
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.experiment_fullstack import SCRIPT, SUITE, Clock, Stack, call, table_text  # noqa: E402

TERMINAL = {"succeeded", "failed", "cancelled"}


def delayed_script(source: Path, delay: float, seeds: int, out: Path) -> Path:
    """The demo script with every answer delayed and usable once per seed."""
    script = json.loads(source.read_text(encoding="utf-8"))
    for step in script["steps"]:
        step["delay_s"] = delay
        step["repeat"] = int(step.get("repeat", 1)) * seeds
    out.write_text(json.dumps(script), encoding="utf-8")
    return out


def reset_database(url: str) -> None:
    """An empty public schema in the given PostgreSQL database (each pass starts from nothing)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


def query(stack: Stack, sql: str) -> list:
    """Rows of a read-only SQL query through Django's connection (SQLite or PostgreSQL alike)."""
    code = ("import json; from django.db import connection\n"
            f"with connection.cursor() as c:\n    c.execute({sql!r}); print(json.dumps(c.fetchall(), default=str))")
    return json.loads(stack.manage("shell", "-c", code).strip().splitlines()[-1])


def start_workers(stack: Stack, args, gpus: int, celery: str) -> None:
    if args.simulated_gpus:
        for index in range(gpus):
            stack.env_for[f"gpu{index}"] = {"KW_SIMULATED_GPU_INDEX": str(index),
                                            "KW_SIMULATED_GPU_SECONDS": str(args.simulated_gpu_seconds)}
            stack.spawn(f"gpu{index}", [celery, "-A", "kernelweb", "worker", "-n", f"gpu{index}@%h", "-Q",
                                        "gpu", "--concurrency", "1", "--loglevel", "INFO",
                                        "--include", "testing.experiment_gpu"])
    else:
        argv = [sys.executable, "manage.py", "gpu_workers"]
        for index in range(gpus):
            argv += ["--gpu", str(index)]
        stack.spawn("gpu-workers", argv)
    # The web-side housekeeping queue (the reconciler's beat) on its own worker, as in production.
    stack.spawn("housekeeping", [celery, "-A", "kernelweb", "worker", "-B", "-n", "housekeeping@%h", "-Q",
                                 "kernelweb", "--concurrency", "1", "--loglevel", "INFO"])


class PassStack(Stack):
    """Stack with a per-process environment (a simulated worker's GPU index)."""

    def __init__(self, var: Path, env: dict[str, str]):
        super().__init__(var, env)
        self.env_for: dict[str, dict[str, str]] = {}

    def spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.var / f"{name}.log", "w")  # noqa: SIM115 - closed in stop()
        env = {**self.env, **self.env_for.get(name, {})}
        self.processes.append((name, subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=log), log))


def one_pass(args, gpus: int, *, kill: bool, clock: Clock, out: Path) -> dict:
    """One experiment on `gpus` workers from an empty stack; with `kill`, one worker dies a third of the way."""
    var = Path(tempfile.mkdtemp(prefix=f"kw-multigpu-{gpus}-"))
    holds = var / "gpu-holds.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    # The scripted LLM listens on loopback, which endpoints may only use when allowed (apps/llm/ssrf.py).
    env.update(LLM_ENDPOINT_ALLOWED_HOSTS="127.0.0.1")
    env.update(KERNELWEB_VAR_DIR=str(var), PYTHONUNBUFFERED="1", DJANGO_SUPERUSER_PASSWORD="multigpu-pass-123",
               KW_TIMING_CACHE=str(var / "baseline-times"), KW_LOCK_DIR=str(var / "locks"),
               KW_GPU_LOCK_LOG=str(holds), RECONCILE_INTERVAL_SECONDS="5", WORKER_HEARTBEAT_SECONDS="2",
               QUOTA_ACTIVE_RUNS="1000")
    if args.database_url:
        reset_database(args.database_url)
        env["DATABASE_URL"] = args.database_url
    if args.redis_url:
        env["REDIS_URL"] = args.redis_url
        import redis

        redis.Redis.from_url(args.redis_url).flushdb()
    bin_dir = Path(sys.executable).parent
    celery = shutil.which("celery", path=str(bin_dir)) or "celery"
    daphne = shutil.which("daphne", path=str(bin_dir)) or "daphne"
    stack = PassStack(var, env)
    name = f"{gpus} GPU{'s' if gpus > 1 else ''}{' + kill' if kill else ''}"
    result: dict = {"pass": name, "gpus": gpus, "kill": kill}
    try:
        stack.manage("migrate", "--noinput")
        stack.manage("sync_tasks")
        stack.manage("createsuperuser", "--noinput", "--username", "multigpu", "--email", "m@example.org")
        script = delayed_script(Path(args.script), args.llm_delay, args.seeds, var / "script.json")
        stack.spawn("llm", [sys.executable, "-m", "testing.scripted_llm", "--script", str(script),
                            "--port", str(args.port + 1)])
        stack.manage("shell", "-c", "from apps.llm.models import LLMEndpoint; LLMEndpoint.objects.create("
                     f"name='scripted', base_url='http://127.0.0.1:{args.port + 1}/v1', model_names=['scripted'])")
        stack.spawn("web", [daphne, "-b", "127.0.0.1", "-p", str(args.port), "kernelweb.asgi:application"])
        start_workers(stack, args, gpus, celery)
        base = f"http://127.0.0.1:{args.port}"
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        token = call(base, "/api/auth/token/", None, {"username": "multigpu", "password": "multigpu-pass-123"})["token"]
        wanted = {f"{t['operator']}/{t['precision']}" for t in json.loads(Path(args.script).read_text())["tasks"]}
        listed = call(base, f"/api/tasks/?suite={SUITE}&backend=cuda&page_size=200", token)["results"]
        ids = [t["id"] for t in listed if f"{t['operator']}/{t['precision']}" in wanted]
        endpoint = call(base, "/api/endpoints/", token)["results"][0]["id"]
        launched = call(base, "/api/experiments/", token, {
            "name": name, "tasks": ids, "endpoint": endpoint, "model": "scripted", "rounds": 1, "debug_rounds": 1,
            "profile_mode": "none", "temperature": 0, "seeds": args.seeds})
        experiment, started = launched["id"], time.time()
        clock.say(f"{name}: experiment {experiment}, {len(ids)} tasks × {args.seeds} seeds launched")
        killed = None
        while True:
            detail = call(base, f"/api/experiments/{experiment}/", token)["progress"]
            done = detail["done"]
            if kill and killed is None and done >= detail["total"] // 3:
                killed = kill_one_worker(stack, args)
                clock.say(f"{name}: {done}/{detail['total']} done; SIGKILLed worker {killed['name']}")
            if not detail["is_active"] or time.time() - started > args.deadline:
                break
            time.sleep(args.poll)
        wall = time.time() - started
        result.update(experiment=experiment, wall_s=round(wall, 1), finished=not detail["is_active"],
                      counts={k: v for k, v in detail["counts"].items() if v}, killed=killed)
        rows = query(stack, "SELECT gpu_uuid, worker_name, status, COUNT(*) FROM runs_run GROUP BY 1, 2, 3")
        result["runs"] = [{"gpu_uuid": u, "worker": w, "status": s, "runs": n} for u, w, s, n in rows]
        result["lost"] = sum(n for _, _, s, n in rows if s not in TERMINAL)
        result["errors"] = [e for (e,) in query(stack, "SELECT DISTINCT error FROM runs_run WHERE error <> ''")]
        result["gpus_busy"] = busy_fractions(holds, started, wall)
        clock.say(f"{name}: {'finished' if result['finished'] else 'NOT finished'} in {wall:.1f} s")
        return result
    finally:
        stack.stop(out / "logs" / name.replace(" ", "-"))
        shutil.rmtree(var, ignore_errors=True)


def kill_one_worker(stack: Stack, args) -> dict:
    """SIGKILL the busy GPU worker with the highest index (no goodbye: only its silence tells)."""
    rows = query(stack, "SELECT name, pid, current_run_id FROM fleet_worker WHERE stopped_at IS NULL "
                        "AND name LIKE 'gpu%' ORDER BY gpu_index DESC")
    name, pid, run = next(((n, p, r) for n, p, r in rows if r), rows[0])
    os.kill(int(pid), signal.SIGKILL)
    return {"name": name, "pid": pid, "run_in_flight": run}


def busy_fractions(holds: Path, started: float, wall: float) -> list[dict]:
    """Per GPU lock: time held / wall time, and holds that overlapped another hold of the same GPU."""
    spans: dict[str, list[tuple[float, float]]] = {}
    if holds.is_file():
        for line in holds.read_text().splitlines():
            hold = json.loads(line)
            if hold["end"] >= started:
                spans.setdefault(hold["key"], []).append((max(hold["start"], started), hold["end"]))
    out = []
    for key, items in sorted(spans.items()):
        items.sort()
        overlaps = sum(1 for (_, end), (start, _) in zip(items, items[1:], strict=False) if start < end)
        held = sum(end - start for start, end in items)
        out.append({"gpu": key, "holds": len(items), "held_s": round(held, 1),
                    "busy": round(held / wall, 3) if wall else None, "overlaps": overlaps})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--gpus", type=int, default=2, help="GPU workers of the second pass (the first has one)")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--llm-delay", type=float, default=3.0, help="seconds before each scripted answer")
    parser.add_argument("--script", default=str(SCRIPT))
    parser.add_argument("--database-url", default="", help="PostgreSQL for every pass (emptied before each)")
    parser.add_argument("--redis-url", default="", help="Redis broker and channel layer (flushed before each)")
    parser.add_argument("--simulated-gpus", action="store_true", help="dry run without GPUs (see above)")
    parser.add_argument("--simulated-gpu-seconds", type=float, default=2.0)
    parser.add_argument("--skip-kill", action="store_true")
    parser.add_argument("--deadline", type=float, default=1800, help="seconds per pass before giving up")
    parser.add_argument("--poll", type=float, default=1.0)
    parser.add_argument("--port", type=int, default=8890)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    clock, out = Clock(), Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    summary = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "simulated": args.simulated_gpus,
               "database": "postgresql" if args.database_url else "sqlite",
               "broker": "redis" if args.redis_url else "embedded", "seeds": args.seeds, "llm_delay_s": args.llm_delay}
    if not args.simulated_gpus:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=index,name,uuid", "--format=csv,noheader"],
                             capture_output=True, text=True)
        summary["nvidia_smi"] = smi.stdout.strip() or smi.stderr.strip()
    passes = [one_pass(args, 1, kill=False, clock=clock, out=out), one_pass(args, args.gpus, kill=False,
                                                                             clock=clock, out=out)]
    if not args.skip_kill:
        passes.append(one_pass(args, args.gpus, kill=True, clock=clock, out=out))
    summary["passes"] = passes
    one, many = passes[0], passes[1]
    speedup = one["wall_s"] / many["wall_s"] if one.get("wall_s") and many.get("wall_s") else None
    summary["speedup"] = round(speedup, 2) if speedup else None
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")

    print(f"\n=== wall time ({summary['database']}, {summary['broker']} broker, "
          f"{'simulated GPUs' if args.simulated_gpus else summary.get('nvidia_smi', '')})")
    print(table_text({"columns": ["pass", "finished", "wall_s", "counts", "lost"], "rows": passes}))
    print(f"speedup of {args.gpus} GPUs over 1: {summary['speedup']}× (goal ≥ 1.8× with 2)")
    print("\n=== runs per GPU and worker")
    print(table_text({"columns": ["pass", "gpu_uuid", "worker", "status", "runs"],
                      "rows": [{"pass": p["pass"], **r} for p in passes for r in p.get("runs", [])]}))
    print("\n=== GPU busy fraction and overlapping holds (must be 0)")
    print(table_text({"columns": ["pass", "gpu", "holds", "held_s", "busy", "overlaps"],
                      "rows": [{"pass": p["pass"], **g} for p in passes for g in p.get("gpus_busy", [])]}))
    if not args.skip_kill:
        kill = passes[2]
        print(f"\n=== worker killed: {kill.get('killed')}; runs lost: {kill.get('lost')}; "
              f"errors: {kill.get('errors')}")
    overlaps = sum(g["overlaps"] for p in passes for g in p.get("gpus_busy", []))
    ok = all(p.get("finished") for p in passes) and overlaps == 0 and all(p.get("lost") == 0 for p in passes)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
