"""A real KernelWeb stack in child processes: daphne + a Celery worker on a fresh SQLite
file and the embedded file broker, for end-to-end tests. Nothing is mocked."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from testing.reachable import reachable

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ADMIN, ADMIN_PASSWORD = "tester", "e2e-pass-123"  # the superuser make_stack creates


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Stack:
    base: Path
    port: int
    env: dict
    processes: list = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def manage(self, *args: str) -> str:
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def _spawn(self, name: str, argv: list[str], **env_extra: str) -> None:
        logs = self.base / "logs"
        logs.mkdir(exist_ok=True)
        out = open(logs / f"{name}.log", "w")  # noqa: SIM115 - closed in stop()
        process = subprocess.Popen(argv, cwd=ROOT, env={**self.env, **env_extra}, stdout=out, stderr=out,
                                   start_new_session=True)
        self.processes.append((process, out))

    def start_worker(self, *extra: str, pool: str = "solo", **env_extra: str) -> None:
        """A Celery worker on both queues; the fault tests ask for a prefork pool of one, whose child a lost
        worker takes down with it, as in production."""
        concurrency = ("--concurrency", "1") if pool == "prefork" else ()
        self._spawn("worker", [str(BIN / "celery"), "-A", "kernelweb", "worker", "-Q", "kernelweb,gpu",
                               "--pool", pool, *concurrency, "--loglevel", "INFO", *extra], **env_extra)

    def create_runs(self, rounds: int, *, count: int = 1, dispatch: bool = True) -> list[int]:
        """Runs of the vadd task on the endpoint the test created, as the launch form creates them (run_create)."""
        code = ("from django.contrib.auth.models import User; from apps.catalog.models import Task; "
                "from apps.llm.models import LLMEndpoint; from apps.runs.services import RunConfig, run_create; "
                "task = Task.objects.get(operator='vadd', precision='fp32'); "
                f"config = RunConfig(model='scripted', rounds={rounds}, debug_rounds=0, profile_mode='none', "
                "endpoint_id=LLMEndpoint.objects.get().pk); "
                f"print([run_create(owner=User.objects.get(), task=task, config=config, dispatch={dispatch}).pk "
                f"for _ in range({count})])")
        return json.loads(self.manage("shell", "-c", code).strip().splitlines()[-1])

    def start(self, *, worker: bool = True, worker_args: tuple[str, ...] = ()) -> None:
        self._spawn("web", [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(self.port), "kernelweb.asgi:application"])
        if worker:
            self.start_worker(*worker_args)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url + "/healthz", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("web server did not come up:\n" + self.log("web"))

    def stop(self) -> None:
        for process, _ in self.processes:
            process.terminate()
        for process, out in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
            out.close()

    def log(self, name: str) -> str:
        return (self.base / "logs" / f"{name}.log").read_text()

    def query(self, sql: str, *params):
        with sqlite3.connect(self.base / "var" / "kernelweb.sqlite3") as db:
            return db.execute(sql, params).fetchall()


def make_stack(base: Path, tasks_dir: Path, **extra_env) -> Stack:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")}
    env.update(
        KERNELWEB_VAR_DIR=str(base / "var"),
        TASKS_DIR=str(tasks_dir),
        EVENT_POLL_SECONDS="0.2",
        DJANGO_SUPERUSER_PASSWORD=ADMIN_PASSWORD,
        PYTHONUNBUFFERED="1",
        CHANNELS_PREFIX=f"kw-test-{base.name}",
    )
    env.update(extra_env)
    stack = Stack(base=base, port=free_port(), env=env)
    stack.manage("migrate", "--noinput")
    stack.manage("sync_tasks", "--strict")
    stack.manage("createsuperuser", "--noinput", "--username", ADMIN, "--email", "t@example.org")
    return stack


class Browserless:
    """An HTTP client with cookies and CSRF handling: logs in and submits forms like a browser."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def cookie(self, name: str) -> str:
        return next(c.value for c in self.jar if c.name == name)

    def get(self, path: str):
        return self.opener.open(self.base_url + path, timeout=10)

    def post_form(self, path: str, data: dict):
        page = self.get(path).read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(self.base_url + path, data=body, headers={"Referer": self.base_url + path})
        return self.opener.open(request, timeout=10)

    def login(self, username: str, password: str) -> None:
        response = self.post_form("/accounts/login/", {"username": username, "password": password})
        assert "/accounts/login/" not in response.geturl(), "login failed"


class PrivateRedis:
    """A redis-server of the test's own, to crash and restart: `durable` as the deployment guide asks (append-only
    file, fsync always: queued messages survive a restart), else with persistence off (a restart empties it)."""

    def __init__(self, folder: Path, *, durable: bool):
        self.folder, self.durable, self.port, self.process = folder, durable, free_port(), None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.durable else ["--appendonly", "no"]
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             *persistence, "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while not reachable(self.url, timeout=0.2):
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def crash(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def signed_in_page(context, stack: Stack, *, init_script: str | None = None):
    """A new page of a Playwright browser context, signed in as the stack's superuser. JavaScript errors it raises
    collect in page.js_errors (the browser tests assert it is empty); `init_script` runs before every page's own."""
    page = context.new_page()
    if init_script:
        page.add_init_script(init_script)
    page.js_errors = []
    page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
    page.goto(stack.url + "/accounts/login/")
    page.fill("input[name=username]", ADMIN)
    page.fill("input[name=password]", ADMIN_PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_url(re.compile(r".*/$"))
    return page
