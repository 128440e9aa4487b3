"""Quotas under load: many users each try to queue far more runs than their quota through the real API.

    .venv/bin/python bench/quota_load.py [--users 20] [--attempts 1000] [--threads 4] [--quota 20]

Builds a throwaway database (SQLite in a temp dir, or PostgreSQL when DATABASE_URL names a scratch
database: it is migrated and filled), one task and `--users` ordinary users with API tokens, then has
every user POST `/api/runs/` (one run per request) `--attempts` times, `--threads` requests in flight
at once (each thread its own database connection, users interleaved so that several of one user's
requests race). Requests go through Django's test client with `Authorization: Token ...`: the whole
stack of the API (authentication, throttles, LaunchForm, run_create, the quota check) but no network.
Nothing is sent to a GPU queue (the dispatch is stubbed out; the rows are what the quota counts).

Afterwards a user who has launched nothing yet queues one run, to show that the flood left room for
others. Prints one table: per user accepted (must equal the quota) and refused, with totals, request
latencies, the wall time, and the rows actually stored per user.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def setup_django(var_dir: Path, quota: int) -> None:
    os.environ.update(KERNELWEB_VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="kernelweb.settings",
                      QUOTA_ACTIVE_RUNS=str(quota), API_THROTTLE_USER="100000/minute")
    os.environ.pop("REDIS_URL", None)  # the embedded broker; nothing is sent anyway
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    import logging

    logging.getLogger("django.request").setLevel(logging.ERROR)  # not one warning per refused request


def build(users: int):
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from apps.catalog.models import Task

    task = Task.objects.create(
        suite="bench", operator="vadd", precision="fp32", title="Vector add", category="dense_linear_algebra",
        description="C = A + B", entry_point="vadd", interface="void vadd(const float*, const float*, float*, int)",
        complexity="N", sizes=[{"N": 1024}], outputs=["C"], atol=1e-4, rtol=1e-4, baseline_source="// baseline")
    tokens = {}
    for i in range(users + 1):  # the last one launches only after the flood
        user = User.objects.create_user(f"user{i:02d}", password="bench-pass-123")
        tokens[user.username] = Token.objects.create(user=user).key
    return task, tokens


def flood(task, tokens: dict[str, str], attempts: int, threads: int):
    from django.db import connection
    from django.test import Client

    names = list(tokens)
    jobs = [name for _ in range(attempts) for name in names]  # interleaved: user00, user01, ..., user00, ...
    lock = threading.Lock()
    outcome: dict[str, Counter] = defaultdict(Counter)
    latency: dict[int, list[float]] = defaultdict(list)
    body = {"tasks": [task.pk], "model": "m"}

    def worker(index: int) -> None:
        client = Client()
        try:
            for job in range(index, len(jobs), threads):
                name = jobs[job]
                started = time.perf_counter()
                response = client.post("/api/runs/", body, content_type="application/json",
                                       HTTP_AUTHORIZATION=f"Token {tokens[name]}")
                elapsed = time.perf_counter() - started
                with lock:
                    outcome[name][response.status_code] += 1
                    latency[response.status_code].append(elapsed)
        finally:
            connection.close()

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return outcome, latency, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--attempts", type=int, default=1000, help="POST /api/runs/ per user")
    parser.add_argument("--threads", type=int, default=4, help="requests in flight at once")
    parser.add_argument("--quota", type=int, default=20, help="QUOTA_ACTIVE_RUNS for the run")
    args = parser.parse_args()

    var_dir = Path(tempfile.mkdtemp(prefix="kw-quota-bench-"))
    setup_django(var_dir, args.quota)
    from django.conf import settings
    from django.db import connection

    import apps.runs.dispatch
    from apps.runs.models import Run

    apps.runs.dispatch.enqueue_run = lambda run_id: None  # no GPU queue: the rows are what the quota counts
    task, tokens = build(args.users)
    late = list(tokens)[-1]
    flooders = {name: key for name, key in tokens.items() if name != late}
    outcome, latency, wall = flood(task, flooders, args.attempts, args.threads)

    from django.test import Client

    started = time.perf_counter()
    response = Client().post("/api/runs/", {"tasks": [task.pk], "model": "m"}, content_type="application/json",
                             HTTP_AUTHORIZATION=f"Token {tokens[late]}")
    late_ms = (time.perf_counter() - started) * 1000
    stored = Counter(Run.objects.values_list("owner__username", flat=True))

    engine = connection.vendor
    print(f"quota_load: {args.users} users x {args.attempts} POST /api/runs/, {args.threads} threads, "
          f"QUOTA_ACTIVE_RUNS={settings.QUOTA_ACTIVE_RUNS}, database {engine}")
    print()
    print("| user | accepted (201) | refused (429) | other | runs stored |")
    print("|---|---|---|---|---|")
    for name in flooders:
        counts = outcome[name]
        other = sum(n for code, n in counts.items() if code not in (201, 429))
        print(f"| {name} | {counts[201]} | {counts[429]} | {other} | {stored[name]} |")
    total = Counter()
    for counts in outcome.values():
        total.update(counts)
    requests = sum(total.values())
    other = sum(n for code, n in total.items() if code not in (201, 429))
    print(f"| **all {len(flooders)}** | {total[201]} | {total[429]} | {other} | "
          f"{sum(stored[n] for n in flooders)} |")
    print()
    exact = all(outcome[n][201] == args.quota == stored[n] for n in flooders)
    print(f"every user accepted exactly the quota ({args.quota}): {'yes' if exact else 'NO'}")
    print(f"wall time {wall:.1f} s for {requests} requests ({requests / wall:.0f} requests/s)")
    for code in sorted(latency):
        values = sorted(latency[code])
        p95 = values[int(0.95 * (len(values) - 1))]
        print(f"  HTTP {code}: {len(values)} requests, median {statistics.median(values) * 1000:.1f} ms, "
              f"p95 {p95 * 1000:.1f} ms")
    print(f"a user who had launched nothing ({late}) afterwards: HTTP {response.status_code} in {late_ms:.1f} ms, "
          f"runs stored {stored[late]}")
    if not exact or response.status_code != 201 or other:
        sys.exit(1)


if __name__ == "__main__":
    main()
