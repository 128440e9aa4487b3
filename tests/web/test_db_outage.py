"""The database unreachable from the worker for a few seconds in the middle of a run: a fault a GPU worker must survive.

A real stack on PostgreSQL and Redis: daphne and `manage.py` talk to PostgreSQL directly, the Celery
worker (prefork, simulated GPU, scripted LLM) through a TCP proxy whose link the test cuts for 5 s
(every connection reset, new ones refused), as a database restart or a network drop looks to it.
Each database step of the worker is retried (`apps.runs.execution.db_retry`) and is one transaction,
so the run finishes as if nothing happened: no turn or event missing, none written twice.
"""

import os
import time
import uuid
from urllib.parse import urlparse, urlunparse

import psycopg
import pytest

from testing.reachable import reachable
from testing.scripted_llm import ScriptedLLM
from tests.conftest import REDIS_TEST_URL
from tests.support.scripted_eval import COMMAND, PLAN, kernel
from tests.support.specs import write_task
from tests.support.stack import make_stack
from tests.support.tcp_proxy import OutageProxy

pytestmark = [pytest.mark.slow, pytest.mark.redis]
POSTGRES_TEST_URL = os.environ.get("POSTGRES_TEST_URL", "postgres://postgres@127.0.0.1:5432/kernelweb")
ROUNDS = 3
TERMINAL = ("run.succeeded", "run.failed", "run.cancelled")
SCRIPT = [
    {"agent": "planner", "content": PLAN, "delay_s": 0.5, "repeat": 1000},
    {"agent": "coder", "content": kernel("ok 1.5"), "delay_s": 0.5, "repeat": 1000},
    {"agent": "compiler", "content": COMMAND, "delay_s": 0.5, "repeat": 1000},
]


def _with(url: str, *, db: str | None = None, port: int | None = None) -> str:
    parts = urlparse(url)
    netloc = parts.netloc if port is None else f"{parts.netloc.rsplit(':', 1)[0]}:{port}"
    return urlunparse(parts._replace(netloc=netloc, path=f"/{db}" if db else parts.path))


@pytest.fixture(scope="module")
def database():
    for url, what in ((POSTGRES_TEST_URL, "PostgreSQL"), (REDIS_TEST_URL, "Redis")):
        if not reachable(url):
            if os.environ.get("CI"):
                pytest.fail(f"{what} is required in CI at {url}")
            pytest.skip(f"{what} not reachable at {url}")
    name = f"kw_outage_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_with(POSTGRES_TEST_URL, db="postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield _with(POSTGRES_TEST_URL, db=name)
    with psycopg.connect(_with(POSTGRES_TEST_URL, db="postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def proxy(database):
    parsed = urlparse(database)
    link = OutageProxy((parsed.hostname, parsed.port or 5432))
    yield link
    link.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory, database, proxy):
    import redis

    redis.Redis.from_url(REDIS_TEST_URL).flushdb()
    with ScriptedLLM(SCRIPT) as llm:
        base = tmp_path_factory.mktemp("stack-db-outage")
        write_task(base / "tasks", "vadd")
        stack = make_stack(base, base / "tasks", DATABASE_URL=database, REDIS_URL=REDIS_TEST_URL)
        stack.manage("shell", "-c", "from apps.llm.models import LLMEndpoint; "
                     f"LLMEndpoint.objects.create(name='scripted', base_url='{llm.base_url}')")
        stack.start_worker("--include", "tests.support.simulated_gpu", pool="prefork",
                           DATABASE_URL=_with(database, port=proxy.port), WORKER_DB_RETRY_SECONDS="60")
        yield stack
        stack.stop()


def _query(database, sql, *params):
    with psycopg.connect(database) as db:
        return db.execute(sql, params).fetchall()


def _wait(database, stack, run_id, predicate, what, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = _query(database, "SELECT seq, type FROM runs_runevent WHERE run_id=%s ORDER BY seq", run_id)
        if predicate(events):
            return events
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}\n" + stack.log("worker")[-4000:])


def test_a_run_outlives_a_database_outage_without_losing_or_doubling_anything(stack, database, proxy):
    run_id = stack.create_runs(ROUNDS)[0]
    _wait(database, stack, run_id, lambda ev: [t for _, t in ev].count("turn.finished") >= 2, "two turns")
    cut_before = proxy.cuts
    proxy.outage(5)
    events = _wait(database, stack, run_id, lambda ev: ev[-1][1] in TERMINAL, "the end of the run")

    assert proxy.cuts > cut_before, "the outage cut nothing: the worker was not connected through the proxy"
    assert "database unavailable during" in stack.log("worker"), "the worker never met the outage"
    assert events[-1][1] == "run.succeeded", stack.log("worker")[-3000:]
    assert [s for s, _ in events] == list(range(1, len(events) + 1))  # gapless, each seq once
    turns = _query(database, "SELECT round_index, debug_index FROM runs_turn WHERE run_id=%s ORDER BY 1, 2", run_id)
    assert turns == [(r, 0) for r in range(ROUNDS + 1)]
    finished = [t for _, t in events].count("turn.finished")
    assert finished == ROUNDS + 1, [t for _, t in events]  # one per turn: nothing written twice
    calls = _query(database, "SELECT COUNT(*) FROM runs_agentcall c JOIN runs_turn t ON c.turn_id = t.id "
                             "WHERE t.run_id=%s", run_id)[0][0]
    assert calls == 3 * ROUNDS  # planner, coder, compiler per round, each stored once
    assert _query(database, "SELECT status, error FROM runs_run WHERE id=%s", run_id)[0] == ("succeeded", "")
