"""`/healthz`: each dependency checked on its own, with short timeouts, so the check cannot hang.

    database   SELECT 1                      down → 503
    broker     Redis PING (or the embedded   down → 503: launches are saved but not sent
               broker's folder writable)
    channels   Redis PING of the layer        down → "degraded": live pages fall back to polling
    workers    live GPU workers (heartbeats)  0 → "degraded": runs queue up, nothing is lost

Overall status: "ok" (200), "degraded" (200: alert as a warning), "down" (503: page someone).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection

TIMEOUT_S = 1.0  # per network check: connect and answer


def _redis_ping(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=TIMEOUT_S, socket_timeout=TIMEOUT_S)
    try:
        client.ping()
    finally:
        client.close()


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def check_broker() -> str:
    url = settings.CELERY_BROKER_URL
    if url.startswith(("redis://", "rediss://")):
        _redis_ping(url)
        return "ok"
    if url.startswith("filesystem://"):
        folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]
        if not os.access(folder, os.W_OK):
            raise OSError(f"the embedded broker's folder {folder} is not writable")
        return "ok (embedded)"
    from kombu import Connection

    with Connection(url, connect_timeout=TIMEOUT_S) as conn:
        conn.ensure_connection(max_retries=0)
    return "ok"


def check_channels() -> str:
    layer = settings.CHANNEL_LAYERS["default"]
    if "Redis" not in layer["BACKEND"]:
        return "ok (in-process)"
    host = layer["CONFIG"]["hosts"][0]
    _redis_ping(host["address"] if isinstance(host, dict) else host)
    return "ok"


def live_workers() -> int:
    from apps.fleet.selectors import workers_with_liveness

    return workers_with_liveness().filter(alive=True).count()


def _timed(check: Callable[[], object]) -> dict:
    started = time.monotonic()
    try:
        value = check()
        result = {"status": "ok", "detail": value} if isinstance(value, str) else {"status": "ok", "count": value}
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        result = {"status": "down", "error": f"{type(exc).__name__}: {exc}"[:300]}
    result["ms"] = round((time.monotonic() - started) * 1000, 1)
    return result


def health() -> tuple[dict, int]:
    """The report and its HTTP status."""
    checks = {"database": _timed(check_database), "broker": _timed(check_broker),
              "channel_layer": _timed(check_channels)}
    if checks["database"]["status"] == "ok":
        workers = _timed(live_workers)
        if workers["status"] == "ok" and workers["count"] == 0:
            workers["status"] = "degraded"
            workers["detail"] = "no live GPU worker: runs wait in the queue"
    else:
        workers = {"status": "unknown", "detail": "the database is down"}
    checks["workers"] = workers
    if checks["database"]["status"] == "down" or checks["broker"]["status"] == "down":
        overall, code = "down", 503
    elif any(c["status"] != "ok" for c in checks.values()):
        overall, code = "degraded", 200
    else:
        overall, code = "ok", 200
    return {"status": overall, "checks": checks}, code
