"""Web performance: the trajectory viewer, the runs list and live event delivery.

    .venv/bin/python bench/web_perf.py [--runs 10000] [--turns 100] [--events 200] [--repeat 15]

Builds a throwaway database (SQLite in a temp dir, or PostgreSQL when DATABASE_URL names a scratch
database: it is migrated and filled) with one
run of `--turns` turns made from the recorded softmax trajectory (real code, logs, profiles and LLM
calls, cycled) and `--runs` more runs, then measures in-process with Django's test client (server
time: view + queries + template, no network):

  - the viewer page of the big run, and its query count;
  - the runs list, first and last page, and filtered;

and, with Redis (REDIS_URL, default redis://127.0.0.1:6379/15), the time from an event's append
(before its commit) to its arrival at a client connected to a real daphne server: a Python websocket
client, and (where Debian's Chromium is installed, `--no-browser` to skip) the trajectory viewer open in
headless Chromium, timed in the page when its live-stream script hands the event to the viewer
(`kw:run-event`; the page and this script read the same wall clock). Prints one table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "demo" / "trajectories" / "softmax_fp32_trajectory.json"


def setup_django(var_dir: Path, redis_url: str) -> None:
    os.environ.update(KERNELWEB_VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="kernelweb.settings",
                      REDIS_URL=redis_url, CHANNELS_PREFIX=f"kw-bench-{os.getpid()}")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("sync_tasks", stdout=open(os.devnull, "w"))  # noqa: SIM115 - process-lifetime sink


def build_data(turns: int, runs: int):
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from apps.catalog.models import Task
    from apps.runs.models import AgentCall, Profile, Run, Turn

    user = User.objects.create_user("bench", password="bench-pass-123", is_staff=False)
    call_command("import_trajectory", str(DEMO), "--owner", "bench", stdout=open(os.devnull, "w"))  # noqa: SIM115
    source = Run.objects.get()
    recorded = list(source.turns.order_by("round_index", "debug_index"))
    big = Run.objects.create(owner=user, task=source.task, model="bench", status="succeeded", gpu_name="NVIDIA H200")
    made = []
    for i in range(turns):
        t = recorded[1 + i % (len(recorded) - 1)] if i else recorded[0]
        made.append(Turn(run=big, round_index=i, debug_index=0, kind=t.kind, scheme=t.scheme, code=t.code,
                         compile_command=t.compile_command, compile_log=t.compile_log, ptxas=t.ptxas,
                         results=t.results, verdict=t.verdict, reason=t.reason, score=t.score, valid=t.valid))
    Turn.objects.bulk_create(made)
    made = list(big.turns.order_by("round_index"))
    profiles, calls = [], []
    for i, turn in enumerate(made):
        t = recorded[1 + i % (len(recorded) - 1)] if i else recorded[0]
        profiles += [Profile(turn=turn, size_index=p.size_index, size=p.size, kernel=p.kernel,
                             bottleneck=p.bottleneck, filtered_metrics=p.filtered_metrics,
                             full_metrics=p.full_metrics) for p in t.profiles.all()]
        calls += [AgentCall(turn=turn, role=c.role, model=c.model, messages=c.messages, response=c.response,
                            tokens_in=c.tokens_in, tokens_out=c.tokens_out) for c in t.agent_calls.all()]
    Profile.objects.bulk_create(profiles)
    AgentCall.objects.bulk_create(calls)
    best = max((t for t in made if t.valid and t.score), key=lambda t: t.score)
    Run.objects.filter(pk=big.pk).update(best_turn=best, best_score=best.score)
    tasks = list(Task.objects.all())
    statuses = ["succeeded", "failed", "cancelled", "queued", "running"]
    Run.objects.bulk_create(
        [Run(owner=user, task=tasks[i % len(tasks)], model=f"model-{i % 7}", status=statuses[i % 5],
             best_score=(i % 97) / 10 or None, cost_usd=i % 13, is_public=i % 3 == 0) for i in range(runs)],
        batch_size=2000,
    )
    return user, big, len(profiles), len(calls)


def time_get(client, url: str, repeat: int) -> tuple[list[float], int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm: template loading, first-query caches
    samples = []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return samples, len(queries), len(response.content)


async def event_latency(run_id: int, port: int, cookie: str, count: int) -> list[float]:
    import websockets
    from asgiref.sync import sync_to_async

    from apps.runs.events import event_append
    from apps.runs.models import Run

    after = await sync_to_async(lambda: Run.objects.get(pk=run_id).last_event_seq)()
    uri = f"ws://127.0.0.1:{port}/ws/runs/{run_id}/events/?after={after}"
    latencies = []
    async with websockets.connect(uri, additional_headers={"Cookie": f"sessionid={cookie}",
                                                           "Origin": f"http://127.0.0.1:{port}"}) as socket:
        await asyncio.sleep(0.5)  # the consumer has joined the group
        for i in range(count):
            sent = time.perf_counter()
            event = await sync_to_async(event_append)(run_id, "bench.ping", {"i": i})
            while True:
                message = json.loads(await asyncio.wait_for(socket.recv(), 10))
                if message.get("seq") == event.seq:
                    latencies.append((time.perf_counter() - sent) * 1000)
                    break
            await asyncio.sleep(0.01)
    return latencies


async def browser_latency(run_id: int, port: int, cookie: str, count: int, chromium: str) -> list[float]:
    """Append events while the viewer of the run is open in Chromium; the page records when each arrives."""
    from asgiref.sync import sync_to_async
    from playwright.async_api import async_playwright

    from apps.runs.events import event_append

    base = f"http://127.0.0.1:{port}"
    arrived: dict[int, float] = {}
    latencies = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        context = await browser.new_context()
        await context.add_cookies([{"name": "sessionid", "value": cookie, "url": base}])
        page = await context.new_page()
        await page.expose_function("kwArrived", lambda seq, at: arrived.__setitem__(seq, at))
        await page.add_init_script("document.addEventListener('kw:run-event', (e) => "
                                   "window.kwArrived(e.detail.seq, performance.timeOrigin + performance.now()));")
        await page.goto(f"{base}/runs/{run_id}/")
        await page.wait_for_function("document.getElementById('stream-state')?.textContent === 'live'")
        await asyncio.sleep(0.5)
        for i in range(count):
            sent = time.time() * 1000
            event = await sync_to_async(event_append)(run_id, "bench.ping", {"i": i})
            for _ in range(2000):
                if event.seq in arrived:
                    break
                await asyncio.sleep(0.002)
            else:
                raise RuntimeError(f"event {event.seq} never reached the page")
            latencies.append(arrived[event.seq] - sent)
            await asyncio.sleep(0.05)  # the viewer refreshes its fragments after each event, as in a real run
        await browser.close()
    return latencies


def session_cookie(client) -> str:
    return client.cookies["sessionid"].value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15"))
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium measurement")
    args = parser.parse_args()
    var_dir = Path(tempfile.mkdtemp(prefix="kw-webperf-"))
    setup_django(var_dir, args.redis)
    from django.conf import settings
    from django.test import Client

    print(f"database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}; building data…", flush=True)
    started = time.perf_counter()
    user, big, profiles, calls = build_data(args.turns, args.runs)
    print(f"  {args.turns} turns ({profiles} profiles, {calls} LLM calls) + {args.runs} runs "
          f"in {time.perf_counter() - started:.1f} s", flush=True)
    client = Client()
    client.force_login(user)
    rows = []
    pages = args.runs // 25 + 1
    for name, url in [
        (f"viewer, {args.turns}-turn run", f"/runs/{big.pk}/"),
        ("viewer, turn panel fragment", f"/runs/{big.pk}/panel/?turn=1.0"),
        ("viewer, live fragment", f"/runs/{big.pk}/live/"),
        (f"runs list, page 1 of {pages}", "/runs/"),
        (f"runs list, page {pages}", f"/runs/?page={pages}"),
        ("runs list, status+sort by P", "/runs/?status=succeeded&sort=-best_score"),
    ]:
        samples, queries, size = time_get(client, url, args.repeat)
        rows.append((name, statistics.median(samples), sorted(samples)[int(0.95 * (len(samples) - 1))], queries,
                     size // 1024))
    print(f"\n{'page':<34} {'median ms':>10} {'p95 ms':>8} {'queries':>8} {'KiB':>6}")
    for name, median, p95, queries, size in rows:
        print(f"{name:<34} {median:>10.1f} {p95:>8.1f} {queries:>8} {size:>6}")

    from testing.reachable import reachable

    if not reachable(args.redis):
        print(f"\nevent delivery: skipped, Redis not reachable at {args.redis}")
        return 0
    port = int(os.environ.get("BENCH_PORT", "8765"))
    env = dict(os.environ, EVENT_POLL_SECONDS="30")  # live delivery must come through Redis, not the DB tail
    web = subprocess.Popen([str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                            "kernelweb.asgi:application"], cwd=ROOT, env=env,
                           stdout=subprocess.DEVNULL, stderr=open(var_dir / "web.log", "w"))  # noqa: SIM115
    try:
        for _ in range(100):
            if reachable(f"redis://127.0.0.1:{port}/0"):
                break
            time.sleep(0.1)
        latencies = asyncio.run(event_latency(big.pk, port, session_cookie(client), args.events))
        chromium = None if args.no_browser else shutil.which("chromium") or shutil.which("chromium-browser")
        in_browser = []
        if chromium:
            from apps.runs.models import Run

            Run.objects.filter(pk=big.pk).update(status="running")  # the viewer streams only active runs
            in_browser = asyncio.run(browser_latency(big.pk, port, session_cookie(client), args.events, chromium))
    finally:
        web.terminate()
        web.wait(10)
    for label, samples in (("a websocket client (Python)", latencies), ("the viewer in headless Chromium", in_browser)):
        if not samples:
            print(f"\nevent delivery to {label}: skipped (no chromium on PATH, or --no-browser)")
            continue
        samples.sort()
        print(f"\nevent delivery over Redis to {label}, {len(samples)} events:")
        print(f"  median {statistics.median(samples):.1f} ms, p95 {samples[int(0.95 * (len(samples) - 1))]:.1f} ms,"
              f" max {samples[-1]:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
