"""Load on one web process, on loopback only, bounded in time and count (docs/benchmarks.md, "Load").

    .venv/bin/python bench/load.py [--viewers 200] [--runs 50] [--rate 2] [--seconds 30]
                                   [--api-clients 16] [--api-requests 2000] [--redis URL]

1. websockets: one daphne process with the Redis channel layer; `--viewers` websocket clients watch one
   run, one more client watches each of the other runs; `--runs` runs get `--rate` events per second each
   for `--seconds`, appended by 4 producer processes exactly as a GPU worker does (`event_append`: a
   database row, then a publish). Each event carries its send time; a client records the arrival.
   Clients reconnect with ?after=<last seq> if dropped, like the browser. After the producers stop, every
   client must hold every event of its run: "lost" counts what is still missing then (must be 0).
2. API: `--api-clients` threads send `--api-requests` requests in all with a token to the runs list
   (`GET /api/runs/`, 25 per page) and to launch (`POST /api/runs/`, one run each; no worker consumes them).

Prints the tables of docs/benchmarks.md: delivery latency p50/p95/max, lost events, reconnects, and the
web process's CPU (percent of one core) and peak memory; API throughput and latency per endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def setup_django(var_dir: Path, redis_url: str) -> None:
    os.environ.update(KERNELWEB_VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="kernelweb.settings",
                      REDIS_URL=redis_url)
    os.environ.setdefault("CHANNELS_PREFIX", f"kw-load-{os.getpid()}")  # producers inherit the web's prefix
    os.environ.setdefault("QUOTA_ACTIVE_RUNS", "1000000")  # measures the API, not the quota (bench/quota_load.py)
    import django

    django.setup()


def prepare(runs: int) -> tuple[list[int], str, str, int]:
    """Runs to stream into, a logged-in session cookie, an API token and a task id."""
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from apps.catalog.models import Task
    from apps.runs.models import Run

    call_command("migrate", verbosity=0)
    call_command("sync_tasks", stdout=open(os.devnull, "w"))  # noqa: SIM115 - process-lifetime sink
    user = User.objects.create_user("load", password="load-pass-123")
    task = Task.objects.get(operator="vector_add", precision="fp32")
    ids = [Run.objects.create(owner=user, task=task, model="load", status="running").pk for _ in range(runs)]
    client = Client()
    client.force_login(user)
    return ids, client.cookies["sessionid"].value, Token.objects.create(user=user).key, task.pk


def produce(var_dir: str, redis_url: str, run_ids: list[int], rate: float, seconds: float) -> None:
    """A producer process: `rate` events per second on each of its runs, each carrying its send time."""
    setup_django(Path(var_dir), redis_url)
    from apps.runs.events import event_append

    period = 1.0 / rate
    deadline = time.monotonic() + seconds
    next_at = time.monotonic()
    while next_at < deadline:
        for run_id in run_ids:
            event_append(run_id, "load.tick", {"sent": time.time()})
        next_at += period
        time.sleep(max(0.0, next_at - time.monotonic()))


async def watch(port: int, cookie: str, run_id: int, got: dict, stats: dict, stop: asyncio.Event) -> None:
    headers = {"Cookie": f"sessionid={cookie}", "Origin": f"http://127.0.0.1:{port}"}
    import websockets

    last = 0
    while not stop.is_set():
        try:
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws/runs/{run_id}/events/?after={last}",
                                          additional_headers=headers, open_timeout=30, max_queue=None) as socket:
                while not stop.is_set():
                    try:
                        message = json.loads(await asyncio.wait_for(socket.recv(), 0.5))
                    except TimeoutError:
                        continue
                    if message.get("seq", 0) <= last:
                        continue
                    last = message["seq"]
                    got.setdefault(run_id, set()).add(last)
                    sent = (message.get("payload") or {}).get("sent")
                    if sent:
                        stats["latency"].append((time.time() - sent) * 1000)
        except (OSError, websockets.WebSocketException, TimeoutError):  # as the browser: retry from `last`
            stats["reconnects"] += 1
            await asyncio.sleep(0.5)


class Sampler(threading.Thread):
    """CPU (percent of one core) and resident memory of a process, once a second."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.cpu, self.rss_mib, self.stopped = pid, [], [], threading.Event()

    def _ticks(self) -> int:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def run(self) -> None:
        hz = os.sysconf("SC_CLK_TCK")
        before, at = self._ticks(), time.monotonic()
        while not self.stopped.wait(1.0):
            now_ticks, now = self._ticks(), time.monotonic()
            self.cpu.append(100.0 * (now_ticks - before) / hz / (now - at))
            before, at = now_ticks, now
            status = Path(f"/proc/{self.pid}/status").read_text()
            self.rss_mib.append(int(status.split("VmRSS:")[1].split()[0]) / 1024)


async def websocket_load(args, port: int, cookie: str, run_ids: list[int], var_dir: Path) -> dict:
    from apps.runs.models import RunEvent

    stats = {"latency": [], "reconnects": 0}
    stop = asyncio.Event()
    watched = [run_ids[0]] * args.viewers + run_ids[1:]
    per_client = [dict() for _ in watched]
    tasks = [asyncio.create_task(watch(port, cookie, run, per_client[i], stats, stop)) for i, run in enumerate(watched)]
    await asyncio.sleep(3)  # every client connected and joined its group
    chunks = [run_ids[i::4] for i in range(4)]
    spawn = multiprocessing.get_context("spawn")  # fresh processes: no database connection shared over fork
    producers = [spawn.Process(target=produce, args=(str(var_dir), args.redis, chunk, args.rate,
                                                                args.seconds)) for chunk in chunks if chunk]
    for p in producers:
        p.start()
    while any(p.is_alive() for p in producers):
        await asyncio.sleep(0.5)
    from asgiref.sync import sync_to_async

    expected = await sync_to_async(lambda: {
        run: set(RunEvent.objects.filter(run_id=run).values_list("seq", flat=True)) for run in run_ids})()
    deadline = time.monotonic() + 30  # replay and the DB tail may still be catching up
    while time.monotonic() < deadline:
        missing = sum(len(expected[run] - per_client[i].get(run, set())) for i, run in enumerate(watched))
        if not missing:
            break
        await asyncio.sleep(0.5)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"latency": sorted(stats["latency"]), "reconnects": stats["reconnects"], "missing": missing,
            "events": sum(len(v) for v in expected.values()), "deliveries": sum(
                len(per_client[i].get(run, set())) for i, run in enumerate(watched))}


def api_load(port: int, token: str, task_id: int, clients: int, requests: int) -> list[tuple]:
    rows = []
    body = json.dumps({"tasks": [task_id], "model": "load", "rounds": 1, "debug_rounds": 0,
                       "profile_mode": "none"}).encode()
    for name, method, path, data in [("GET /api/runs/", "GET", "/api/runs/", None),
                                     ("POST /api/runs/ (launch)", "POST", "/api/runs/", body)]:
        samples, errors, lock = [], [], threading.Lock()

        def worker(count: int, method=method, path=path, data=data, samples=samples, errors=errors, lock=lock):
            for _ in range(count):
                request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                                 headers={"Authorization": f"Token {token}",
                                                          "Content-Type": "application/json"})
                started = time.perf_counter()
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        response.read()
                    with lock:
                        samples.append((time.perf_counter() - started) * 1000)
                except OSError as exc:
                    with lock:
                        errors.append(str(exc))

        started = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(requests // clients,)) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - started
        samples.sort()
        rows.append((name, len(samples), len(errors), len(samples) / wall, statistics.median(samples),
                     samples[int(0.95 * (len(samples) - 1))], errors[:1]))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--viewers", type=int, default=200)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rate", type=float, default=2.0, help="events per second per run")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--api-clients", type=int, default=16)
    parser.add_argument("--api-requests", type=int, default=2000)
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/12"))
    parser.add_argument("--postgres", metavar="URL", help="a PostgreSQL server (postgres://user@host:5432): the "
                        "bench creates a database of its own there and drops it at the end; default SQLite")
    args = parser.parse_args()
    if not 1 <= args.viewers <= 2000 or not 1 <= args.runs <= 500 or not 0 < args.seconds <= 600:
        parser.error("bounded: 1..2000 viewers, 1..500 runs, at most 600 s")
    from testing.reachable import reachable

    if not reachable(args.redis):
        print(f"Redis is not reachable at {args.redis}: the load test needs it", file=sys.stderr)
        return 1
    import redis

    redis.Redis.from_url(args.redis).flushdb()
    var_dir = Path(tempfile.mkdtemp(prefix="kw-load-"))
    database = None
    if args.postgres:
        import psycopg

        database = f"kw_load_{os.getpid()}"
        with psycopg.connect(args.postgres.rstrip("/") + "/postgres", autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{database}"')
        os.environ["DATABASE_URL"] = f"{args.postgres.rstrip('/')}/{database}"
    try:
        return run_load(args, var_dir)
    finally:
        if database:
            with psycopg.connect(args.postgres.rstrip("/") + "/postgres", autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def run_load(args, var_dir: Path) -> int:
    import redis

    setup_django(var_dir, args.redis)
    from django.conf import settings

    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    run_ids, cookie, token, task_id = prepare(args.runs)
    port = int(os.environ.get("BENCH_PORT", "8766"))
    env = dict(os.environ, API_THROTTLE_USER="1000000/minute", LOG_LEVEL="WARNING",
               DB_POOL_MAX_SIZE=os.environ.get("DB_POOL_MAX_SIZE", "20"))  # the web server's recommended pool
    with open(var_dir / "web.log", "w") as log:
        web = subprocess.Popen([str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                                "kernelweb.asgi:application"], cwd=ROOT, env=env, stdout=log, stderr=log)
        try:
            for _ in range(200):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            sampler = Sampler(web.pid)
            sampler.start()
            print(f"database: {engine}; {args.viewers} viewers on one run + 1 on each of {args.runs - 1} others; "
                  f"{args.runs} runs × "
                  f"{args.rate:g} events/s for {args.seconds:g} s…", flush=True)
            ws = asyncio.run(websocket_load(args, port, cookie, run_ids, var_dir))
            ws_cpu, ws_rss = list(sampler.cpu), list(sampler.rss_mib)
            print(f"API: {args.api_clients} clients, {args.api_requests} requests per endpoint…", flush=True)
            api = api_load(port, token, task_id, args.api_clients, args.api_requests)
            sampler.stopped.set()
        finally:
            web.terminate()
            web.wait(15)
    redis.Redis.from_url(args.redis).flushdb()
    lat = ws["latency"]
    print("\n| websocket load | value |\n|---|---|")
    print(f"| events appended | {ws['events']} |\n| deliveries to clients | {ws['deliveries']} |")
    print(f"| delivery latency p50 / p95 / max (ms) | {statistics.median(lat):.1f} / "
          f"{lat[int(0.95 * (len(lat) - 1))]:.1f} / {lat[-1]:.1f} |")
    print(f"| lost events after replay | {ws['missing']} |\n| reconnects | {ws['reconnects']} |")
    print(f"| web process CPU, mean / peak (% of one core) | {statistics.mean(ws_cpu):.0f} / {max(ws_cpu):.0f} |")
    print(f"| web process memory, peak (MiB) | {max(ws_rss):.0f} |")
    print("\n| API endpoint | requests | errors | req/s | p50 ms | p95 ms |\n|---|---|---|---|---|---|")
    for name, ok, errors, rps, p50, p95, first_error in api:
        print(f"| {name} | {ok} | {errors} | {rps:.0f} | {p50:.1f} | {p95:.1f} |"
              + (f" first error: {first_error[0]}" if first_error else ""))
    return 1 if ws["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
