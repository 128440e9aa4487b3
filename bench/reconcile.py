"""The delivery reconciler's pass (apps/runs/reconcile.py) over a large runs table.

    .venv/bin/python bench/reconcile.py [--runs 20000] [--repeat 5]

Builds a throwaway SQLite database in a temp dir (or PostgreSQL when DATABASE_URL names a scratch
database: it is migrated and filled) with `--runs` finished runs and, beside them, runs in each state
the reconciler acts on: unsent (the broker refused at launch), stuck queued (sent long ago, a worker of
the queue idle), running on a dead worker, plus healthy queued and running runs it must leave alone.
The broker is stubbed (each send is a no-op), so this times the reconciler's own queries. Prints one
table: the first pass (which acts on every case) and a steady-state pass (nothing to do), in ms.
Timings of the real stack (Redis, Celery, daphne) are in tests/web/test_delivery_faults.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20000, help="finished runs in the table")
    parser.add_argument("--each", type=int, default=50, help="runs in each state the reconciler acts on")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    var = tempfile.mkdtemp(prefix="kw-bench-reconcile-")
    os.environ.update(KERNELWEB_VAR_DIR=var, DJANGO_SETTINGS_MODULE="kernelweb.settings",
                      RUN_DISPATCH_GRACE_SECONDS="30", RUN_REDISPATCH_AFTER_SECONDS="300", RUN_MAX_DISPATCHES="3")
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.utils import timezone

    from apps.catalog.models import Task
    from apps.fleet.models import Worker
    from apps.runs import dispatch
    from apps.runs.models import Run, RunStatus
    from apps.runs.reconcile import reconcile

    call_command("migrate", verbosity=0)
    dispatch.enqueue_run = lambda run_id: None  # the broker, stubbed: time the reconciler only
    owner = User.objects.create(username="bench")
    task = Task.objects.create(suite="bench", operator="vadd", precision="fp32", title="v", category="c",
                               entry_point="vadd", interface="", complexity="N", sizes=[{"N": 1}], outputs=["C"],
                               atol=1e-4, rtol=1e-4)
    now = timezone.now()
    old, fresh = now - timedelta(hours=1), now - timedelta(seconds=5)
    Worker.objects.create(name="idle@a", host="a", queues=["gpu"], started_at=old, last_seen=now)
    dead = Worker.objects.create(name="dead@b", host="b", queues=["gpu"], started_at=old, last_seen=old)

    def runs(n, **fields):
        return [Run(owner=owner, task=task, model="m", queue="gpu", **fields) for _ in range(n)]

    batch = (runs(args.runs, status=RunStatus.SUCCEEDED, dispatch_attempts=1, dispatched_at=old, started_at=old,
                  finished_at=old)
             + runs(args.each, status=RunStatus.QUEUED, dispatch_pending=True)  # unsent
             + runs(args.each, status=RunStatus.QUEUED, dispatch_attempts=1, dispatched_at=old)  # stuck
             + runs(args.each, status=RunStatus.QUEUED, dispatch_attempts=1, dispatched_at=fresh)  # healthy
             + runs(args.each, status=RunStatus.RUNNING, worker_host="b", started_at=old, attempts=1)  # lost
             + runs(args.each, status=RunStatus.RUNNING, worker_host="a", started_at=old, attempts=1))  # healthy
    Run.objects.bulk_create(batch, batch_size=2000)
    Run.objects.filter(dispatch_pending=True).update(created_at=old)
    Worker.objects.filter(pk=dead.pk).update(current_run=Run.objects.filter(worker_host="b").first())

    started = time.perf_counter()
    first = reconcile()
    first_ms = (time.perf_counter() - started) * 1000
    steady = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        report = reconcile()
        steady.append((time.perf_counter() - started) * 1000)
        assert not (report.sent or report.resent or report.failed_lost), report
    engine = "PostgreSQL" if os.environ.get("DATABASE_URL") else "SQLite"
    total = Run.objects.count()
    print(f"reconciler pass, {engine}, {total} runs ({args.runs} finished, {args.each} in each of 5 live states)")
    print("| pass | acted on | ms |")
    print("|---|---|---|")
    print(f"| first | sent {len(first.sent)}, re-sent {len(first.resent)}, worker lost {len(first.failed_lost)} | "
          f"{first_ms:.0f} |")
    print(f"| steady (median of {args.repeat}) | nothing | {statistics.median(steady):.1f} |")


if __name__ == "__main__":
    main()
