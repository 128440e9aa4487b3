import os
import shutil
import subprocess

import pytest

from testing.reachable import reachable

# Redis databases the tests flush: one per pytest-xdist worker, counting down from REDIS_TEST_URL's (15, 14, 11,
# ...), past the two held by files that run whole on one worker (`--dist loadfile`, Makefile):
# tests/web/test_deploy.py (12) and tests/web/test_fleet_workers.py (13). Database 0 is left to development.
FILE_OWNED_REDIS_DBS = (12, 13)


def _redis_test_url() -> str:
    """REDIS_TEST_URL, a database of its own for each pytest-xdist worker, since the tests flush it."""
    url = os.environ.get("REDIS_TEST_URL", "redis://127.0.0.1:6379/15")
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    base, _, db = url.rpartition("/")
    if not db.isdigit() or worker == 0:
        return url
    free = [n for n in range(int(db), 0, -1) if n not in FILE_OWNED_REDIS_DBS]
    if worker >= len(free):
        raise pytest.UsageError(
            f"{worker + 1} pytest-xdist workers, but only {len(free)} Redis databases to give them ({url} down to 1, "
            f"less {FILE_OWNED_REDIS_DBS}): use fewer workers"
        )
    return f"{base}/{free[worker]}"


REDIS_TEST_URL = _redis_test_url()
# The suite's LLM servers (testing/scripted_llm.py) listen on loopback: allow it, as a deployment with a local
# model server would (kernelweb/settings.py reads this; tests/web/test_endpoint_ssrf.py tests the refusals).
TEST_LLM_HOSTS = "127.0.0.1,localhost,::1"
os.environ.setdefault("LLM_ENDPOINT_ALLOWED_HOSTS", TEST_LLM_HOSTS)


@pytest.fixture(autouse=True, scope="session")
def _allow_the_test_llm_servers():
    """The same for this process, whose settings pytest-django loaded before this file set the variable. The
    engine's GPU tests run on GPU hosts without Django (`bench/gpu_run.sh tests`): nothing to set there."""
    try:
        from django.conf import settings
    except ImportError:
        return
    if not settings.configured:
        return
    settings.LLM_ENDPOINT_ALLOWED_HOSTS = [h for h in os.environ["LLM_ENDPOINT_ALLOWED_HOSTS"].split(",") if h]


def _has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    return subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def pytest_collection_modifyitems(config, items):
    gpu = _has_gpu()
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(pytest.mark.skip(reason="no NVIDIA GPU here; run `make test-gpu` on a GPU machine"))


@pytest.fixture
def redis_url():
    """The real Redis server; a missing server skips locally but fails in CI, where it must run."""
    if not reachable(REDIS_TEST_URL):
        if os.environ.get("CI"):
            pytest.fail(f"Redis is required in CI at {REDIS_TEST_URL}")
        pytest.skip(f"Redis not reachable at {REDIS_TEST_URL}")
    import redis

    client = redis.Redis.from_url(REDIS_TEST_URL)
    client.flushdb()
    yield REDIS_TEST_URL
    client.flushdb()
