"""The whole product on one GPU host: web server, one Celery GPU worker, the embedded broker, a run
launched through the API and followed over a websocket (recorded in docs/gpu-validation.md).

    python3 bench/fullstack.py [--task softmax] [--script demo/scripts/softmax_fp32_demo.json]

Starts from nothing in a temporary KERNELWEB_VAR_DIR: migrate, sync_tasks, a user, the scripted
OpenAI-compatible LLM (testing/scripted_llm.py; the GPU host reaches no real endpoint), daphne and
`celery worker -Q kernelweb,gpu`, and an LLM endpoint row for the scripted server. Then, as a user
would: a token from /api/auth/token/, the task and endpoint ids from the API, POST /api/runs/, a
websocket on /ws/runs/<id>/events/ until the run ends, and /api/runs/<id>/events/
to check that the websocket delivered every stored event exactly once, in order. Prints a summary
and exits non-zero when anything is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TERMINAL = {"run.succeeded", "run.failed", "run.cancelled"}


def api(base: str, path: str, token: str | None = None, data: dict | None = None) -> dict:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    body = json.dumps(data).encode() if data is not None else None
    request = urllib.request.Request(base + path, data=body, headers=headers, method="POST" if body else "GET")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


async def follow(port: int, run_id: int, session: str, seen: list, timeout: float) -> None:
    import websockets

    headers = {"Cookie": f"sessionid={session}", "Origin": f"http://127.0.0.1:{port}"}
    async with asyncio.timeout(timeout):
        while not seen or seen[-1]["type"] not in TERMINAL:
            after = seen[-1]["seq"] if seen else 0
            uri = f"ws://127.0.0.1:{port}/ws/runs/{run_id}/events/?after={after}"
            try:
                async with websockets.connect(uri, additional_headers=headers) as socket:
                    while not seen or seen[-1]["type"] not in TERMINAL:
                        event = json.loads(await socket.recv())
                        if not seen or event["seq"] > seen[-1]["seq"]:
                            seen.append(event)
                            print(f"  ws {event['seq']:>3} {event['type']}", flush=True)
            except (OSError, websockets.ConnectionClosed):
                await asyncio.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="softmax")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--script", default=str(ROOT / "demo" / "scripts" / "softmax_fp32_demo.json"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--debug-rounds", type=int, default=1)
    parser.add_argument("--timing-protocol", choices=("synchronized", "queued"), default="synchronized",
                        help="the run's timing protocol (docs/evaluation.md, \"Timing protocol\")")
    parser.add_argument("--timeout", type=float, default=480)
    parser.add_argument("--port", type=int, default=8790)
    args = parser.parse_args()
    var = Path(tempfile.mkdtemp(prefix="kw-fullstack-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    # The scripted LLM listens on loopback, which endpoints may only use when allowed (apps/llm/ssrf.py).
    env.update(LLM_ENDPOINT_ALLOWED_HOSTS="127.0.0.1")
    env.update(KERNELWEB_VAR_DIR=str(var), PYTHONUNBUFFERED="1", EVENT_POLL_SECONDS="0.5",
               DJANGO_SUPERUSER_PASSWORD="fullstack-pass-123")
    python = [sys.executable, "manage.py"]
    processes = []
    started = time.monotonic()

    def manage(*argv: str) -> str:
        done = subprocess.run([*python, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        if done.returncode:
            raise SystemExit(f"manage.py {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    def spawn(name: str, argv: list[str]) -> None:
        log = open(var / f"{name}.log", "w")  # noqa: SIM115 - closed with the process at the end
        processes.append((name, subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=log), log))

    try:
        manage("migrate", "--noinput")
        manage("sync_tasks", "--strict")
        manage("createsuperuser", "--noinput", "--username", "fullstack", "--email", "f@example.org")
        spawn("llm", [sys.executable, "-m", "testing.scripted_llm", "--script", args.script, "--port", "8791",
                      "--loop"])
        manage("shell", "-c", "from apps.llm.models import LLMEndpoint; LLMEndpoint.objects.create("
               "name='scripted', base_url='http://127.0.0.1:8791/v1')")
        celery = shutil.which("celery", path=str(Path(sys.executable).parent)) or "celery"
        daphne = shutil.which("daphne", path=str(Path(sys.executable).parent)) or "daphne"
        spawn("web", [daphne, "-b", "127.0.0.1", "-p", str(args.port), "kernelweb.asgi:application"])
        spawn("worker", [celery, "-A", "kernelweb", "worker", "-Q", "kernelweb,gpu", "--concurrency", "1",
                         "--loglevel", "INFO"])
        base = f"http://127.0.0.1:{args.port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        print(f"stack up in {time.monotonic() - started:.1f} s", flush=True)
        token = api(base, "/api/auth/token/", data={"username": "fullstack", "password": "fullstack-pass-123"})["token"]
        tasks = api(base, f"/api/tasks/?operator={args.task}&precision={args.precision}", token)
        task_id = next(t["id"] for t in tasks["results"] if t["operator"] == args.task)
        endpoint = api(base, "/api/endpoints/", token)["results"][0]["id"]
        launched = api(base, "/api/runs/", token, {
            "tasks": [task_id], "endpoint": endpoint, "model": "scripted", "rounds": args.rounds,
            "debug_rounds": args.debug_rounds, "profile_mode": "filtered", "temperature": 0,
            "timing_protocol": args.timing_protocol})
        run_id = launched["runs"][0]["id"]
        print(f"run {run_id} launched through the API", flush=True)
        session = manage("shell", "-c", "from django.contrib.sessions.backends.db import SessionStore; "
                         "from django.contrib.auth.models import User; u = User.objects.get(username='fullstack'); "
                         "s = SessionStore(); s['_auth_user_id'] = str(u.pk); "
                         "s['_auth_user_backend'] = 'django.contrib.auth.backends.ModelBackend'; "
                         "s['_auth_user_hash'] = u.get_session_auth_hash(); s.create(); "
                         "print(s.session_key)").split()[-1]
        seen: list = []
        asyncio.run(follow(args.port, run_id, session, seen, args.timeout))
        stored = api(base, f"/api/runs/{run_id}/events/?after=0", token)["events"]
        run = api(base, f"/api/runs/{run_id}/", token)
        turns = api(base, f"/api/runs/{run_id}/turns/", token)
        same = [e["seq"] for e in seen] == [e["seq"] for e in stored]
        timing = (run.get("config") or {}).get("timing_protocol", run.get("timing_protocol"))
        print(f"\nrun {run_id}: {run['status']}, timing {timing}, best P {run.get('best_score')}, "
              f"GPU {run.get('gpu_name')}, "
              f"{len(turns['results'] if isinstance(turns, dict) else turns)} turns, wall {run.get('wall_time_s')} s")
        print(f"events stored {len(stored)}, received over the websocket {len(seen)}, "
              f"identical seq lists: {same}")
        print(f"total {time.monotonic() - started:.1f} s from an empty var dir")
        return 0 if same and run["status"] == "succeeded" else 1
    finally:
        for _name, process, log in processes:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()
        out = os.environ.get("OUT")
        if out:
            for name, _, _ in processes:
                shutil.copy(var / f"{name}.log", Path(out) / f"fullstack-{name}.log")


if __name__ == "__main__":
    sys.exit(main())
