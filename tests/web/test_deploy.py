"""deploy/ and the README's deployment section, run as written: the release commands with the example
environment on PostgreSQL and Redis, each systemd unit's ExecStart (paths moved from /opt/kernelweb
to this checkout), `systemd-analyze verify`, and the Procfile. GPUs come from a stand-in nvidia-smi."""

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.core.management import get_commands

from testing.reachable import reachable
from tests.conftest import FILE_OWNED_REDIS_DBS, REDIS_TEST_URL
from tests.support import fake_nvidia_smi
from tests.support.stack import ROOT, free_port

DEPLOY = ROOT / "deploy"
INSTALL_DIR, ENV_FILE = "/opt/kernelweb", "/etc/kernelweb/kernelweb.env"
POSTGRES_TEST_URL = os.environ.get("POSTGRES_TEST_URL", "postgres://postgres@127.0.0.1:5432/kernelweb")
REDIS_URL = re.sub(r"/\d+$", "", REDIS_TEST_URL) + f"/{FILE_OWNED_REDIS_DBS[0]}"  # its own database: flushed here
HOST = socket.gethostname()
SITE = "kernels.example.org"
REQUIRED_IN_PRODUCTION = {"KERNELWEB_ENV", "SECRET_KEY", "ALLOWED_HOSTS", "FIELD_ENCRYPTION_KEYS", "DATABASE_URL",
                          "REDIS_URL", "CSRF_TRUSTED_ORIGINS"}


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key, []).append(value)
    return sections


def env_example() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in (DEPLOY / "kernelweb.env.example").read_text().splitlines()
             if line.strip() and not line.startswith("#"))
    return dict(pairs)


def readme_deployment() -> str:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Deployment")
    return readme[start:readme.index("\n## ", start + 1)]


def moved(text: str) -> str:
    return text.replace(INSTALL_DIR, str(ROOT))


# --- static checks ----------------------------------------------------------------------------------

def test_the_units_run_programs_of_this_checkout_with_the_documented_environment_file():
    for name in ("kernelweb-web.service", "kernelweb-worker@.service", "kernelweb-reconciler.service"):
        service = parse_unit(DEPLOY / "systemd" / name)["Service"]
        assert service["WorkingDirectory"] == [INSTALL_DIR] and service["EnvironmentFile"] == [ENV_FILE], name
        argv = shlex.split(moved(service["ExecStart"][0]).replace("%i", "0"))
        assert os.access(argv[0], os.X_OK), argv[0]
        if "manage.py" in argv:
            assert argv[argv.index("manage.py") + 1] in get_commands(), argv
    worker = parse_unit(DEPLOY / "systemd" / "kernelweb-worker@.service")["Service"]
    assert worker["ExecStart"] == [f"{INSTALL_DIR}/.venv/bin/python manage.py gpu_workers --gpu %i --exec"]
    assert worker["KillMode"] == ["mixed"]  # SIGTERM to Celery alone: its warm shutdown, not its pool children's


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_both_units_without_a_warning(tmp_path):
    env_file = tmp_path / "kernelweb.env"
    env_file.write_text((DEPLOY / "kernelweb.env.example").read_text())
    for source, target in (("kernelweb-web.service", "kernelweb-web.service"),
                           ("kernelweb-worker@.service", "kernelweb-worker@0.service"),
                           ("kernelweb-reconciler.service", "kernelweb-reconciler.service")):
        unit = tmp_path / target
        unit.write_text(moved((DEPLOY / "systemd" / source).read_text()).replace(ENV_FILE, str(env_file)))
        result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stdout + result.stderr


def test_the_environment_example_sets_what_production_requires_and_only_variables_the_code_reads():
    names = set(env_example())
    assert REQUIRED_IN_PRODUCTION <= names
    sources = "".join(p.read_text() for folder in ("kernelweb", "apps", "worker")
                      for p in (ROOT / folder).rglob("*.py"))
    unread = sorted(name for name in names if f'"{name}"' not in sources)
    assert not unread, f"the environment example sets variables nothing reads: {unread}"
    readme = (ROOT / "README.md").read_text()
    assert not [name for name in names if f"`{name}`" not in readme], "every variable is in README: Configuration"


def test_the_readme_deployment_section_names_files_and_commands_that_exist():
    section = readme_deployment()
    paths = set(re.findall(r"deploy/[\w@.\-/]+[\w]", section))
    assert {"deploy/systemd/kernelweb-web.service", "deploy/systemd/kernelweb-worker@.service",
            "deploy/kernelweb.env.example", "deploy/Procfile"} <= paths
    assert all((ROOT / p).exists() for p in paths), paths
    commands = set(re.findall(r"manage\.py (\w+)", section))
    assert {"migrate", "collectstatic", "check", "gpu_workers"} <= commands <= set(get_commands())
    targets = set(re.findall(r"make ([\w./-]+)", section))
    makefile = (ROOT / "Makefile").read_text()
    assert all(re.search(rf"^{re.escape(t)}:", makefile, re.M) for t in targets), targets


# --- the deployment, run ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """The example environment pointed at a fresh PostgreSQL database and a Redis database, after the
    README's release commands."""
    for url, what in ((POSTGRES_TEST_URL, "PostgreSQL"), (REDIS_URL, "Redis")):
        if not reachable(url):
            if os.environ.get("CI"):
                pytest.fail(f"{what} is required in CI at {url}")
            pytest.skip(f"{what} not reachable at {url}")
    import psycopg
    import redis

    base = tmp_path_factory.mktemp("deploy")
    database = f"kernelweb_deploy_{os.getpid()}"
    admin = urllib.parse.urlparse(POSTGRES_TEST_URL)._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f"DROP DATABASE IF EXISTS {database}")
        db.execute(f"CREATE DATABASE {database}")
    redis.Redis.from_url(REDIS_URL).flushdb()
    values = env_example()
    values.update(  # the secrets and servers the README says to replace; the rest as shipped
        SECRET_KEY=secrets.token_urlsafe(50), FIELD_ENCRYPTION_KEYS=Fernet.generate_key().decode(),
        DATABASE_URL=urllib.parse.urlparse(POSTGRES_TEST_URL)._replace(path=f"/{database}").geturl(),
        REDIS_URL=REDIS_URL, KERNELWEB_VAR_DIR=str(base / "var"), KW_BUILD_CACHE=str(base / "cache/build"),
        KW_TIMING_CACHE=str(base / "cache/times"), KW_LOCK_DIR=str(base / "locks"),
        WORKER_HEARTBEAT_SECONDS="0.5")  # the only change of a shipped value: a fast test
    assert not [k for k, v in values.items() if "change-me" in v]
    env_file = base / "kernelweb.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    smi = fake_nvidia_smi.install(base / "smi", [fake_nvidia_smi.gpu(0, "NVIDIA H100 80GB HBM3"),
                                                 fake_nvidia_smi.gpu(1, "NVIDIA H100 80GB HBM3")])
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")}
    env.update(values, PATH=f"{smi}{os.pathsep}{env['PATH']}", PYTHONUNBUFFERED="1",
               DJANGO_SUPERUSER_PASSWORD="deploy-pass-123")
    release = re.search(r"```sh\n\s*(set -a; \. /etc/kernelweb/kernelweb\.env; set \+a\n.*?)```",
                        readme_deployment(), re.S).group(1)
    ran = []
    for line in release.strip().splitlines()[1:]:
        command = line.split("#")[0].strip()
        ran.append(command.split()[2])
        if command.endswith("createsuperuser"):
            command += " --noinput --username ops --email ops@example.org"  # interactive in the README
        # Sourced like the README does, so the example file must be valid sh too.
        result = subprocess.run(["sh", "-c", f"set -a; . {env_file}; set +a; {command}"], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert ran == ["migrate", "collectstatic", "sync_tasks", "check", "createsuperuser"]
    yield {"env": env, "base": base, "database": values["DATABASE_URL"]}
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    redis.Redis.from_url(REDIS_URL).flushdb()


class Processes:
    def __init__(self, base: Path):
        self.base, self.started = base, []

    def start(self, name: str, argv: list[str], env: dict) -> subprocess.Popen:
        out = open(self.base / f"{name}.log", "w")  # noqa: SIM115 - closed in stop()
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=out, start_new_session=True)
        self.started.append((process, out))
        return process

    def log(self, name: str) -> str:
        return (self.base / f"{name}.log").read_text()

    def stop(self) -> None:
        for process, out in self.started:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
            out.close()


@pytest.fixture
def processes(deployment):
    started = Processes(deployment["base"])
    yield started
    started.stop()


def https(port: int, path: str, data: dict | None = None, token: str = ""):
    """A request as the TLS proxy forwards it: the public host name and the original scheme."""
    headers = {"Host": SITE, "X-Forwarded-Proto": "https", **({"Authorization": f"Token {token}"} if token else {})}
    body = urllib.parse.urlencode(data).encode() if data else None
    return urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body,
                                                         headers=headers), timeout=10)


def wait_until(what: str, check, logs, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except (OSError, KeyError, ValueError):
            value = None
        if value:
            return value
        time.sleep(0.3)
    pytest.fail(f"timed out waiting for {what}\n{logs()}")


def workers(deployment, token, port) -> dict[str, dict]:
    return {w["name"]: w for w in json.loads(https(port, "/api/workers/", token=token).read())["results"]}


def unit_command(name: str, port: int | None = None, instance: str = "") -> tuple[list[str], dict]:
    service = parse_unit(DEPLOY / "systemd" / name)["Service"]
    command = moved(service["ExecStart"][0]).replace("%i", instance)
    if port is not None:
        command = command.replace("-p 8000", f"-p {port}")
    extra = dict(e.split("=", 1) for e in service.get("Environment", []) if not e.startswith("PATH="))
    return shlex.split(command), {k: moved(v) for k, v in extra.items()}


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_the_web_and_worker_units_serve_the_site_and_register_a_pinned_gpu_worker(deployment, processes):
    env, port = deployment["env"], free_port()
    argv, extra = unit_command("kernelweb-web.service", port)
    assert extra["DB_POOL_MAX_SIZE"] == "20"
    processes.start("web", argv, {**env, **extra})
    wait_until("the web server", lambda: https(port, "/healthz").status == 200, lambda: processes.log("web"))
    assert "Log in" in https(port, "/accounts/login/").read().decode()  # collected, hashed static files
    token = json.loads(https(port, "/api/auth/token/", {"username": "ops", "password": "deploy-pass-123"})
                       .read())["token"]

    argv, extra = unit_command("kernelweb-worker@.service", instance="1")
    worker = processes.start("worker", argv, {**env, **extra})
    name = f"gpu1@{HOST}"
    found = wait_until("the GPU 1 worker on the Workers API", lambda: workers(deployment, token, port).get(name),
                       lambda: processes.log("worker"))
    assert (found["state"], found["gpu_index"], found["gpu_model"], found["queues"]) == (
        "alive", 1, "h100", ["gpu", "gpu.h100"])
    import psycopg

    with psycopg.connect(deployment["database"]) as db:
        pid = db.execute("SELECT pid FROM fleet_worker WHERE name = %s", (name,)).fetchone()[0]
    assert pid == worker.pid  # --exec: the unit's main process is the Celery worker itself
    worker.send_signal(signal.SIGTERM)  # `systemctl stop` with KillMode=mixed
    assert worker.wait(timeout=60) == 0
    assert workers(deployment, token, port)[name]["state"] == "stopped"


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_the_procfile_starts_the_web_server_and_a_worker_per_gpu(deployment, processes):
    env, port = deployment["env"], free_port()
    lines = dict(line.split(": ", 1) for line in (DEPLOY / "Procfile").read_text().splitlines()
                 if line and not line.startswith("#"))
    assert set(lines) == {"web", "worker", "reconciler"}
    for name, command in lines.items():  # as honcho and foreman run them: through sh, in the checkout
        processes.start(f"proc-{name}", ["sh", "-c", f"exec {command}"], {**env, "PORT": str(port)})
    wait_until("the web server", lambda: https(port, "/healthz").status == 200, lambda: processes.log("proc-web"))
    token = json.loads(https(port, "/api/auth/token/", {"username": "ops", "password": "deploy-pass-123"})
                       .read())["token"]
    names = {f"gpu0@{HOST}", f"gpu1@{HOST}"}
    wait_until("a worker per GPU", lambda: names <= {n for n, w in workers(deployment, token, port).items()
                                                     if w["state"] == "alive"}, lambda: processes.log("proc-worker"))
