import os
import shutil

import pytest

from apps.catalog.models import Task
from tests.support.stack import ROOT


@pytest.fixture
def no_worker(monkeypatch):
    """Runs and manual turns launched in a test go nowhere (the test is about the web, not the worker): the ids they
    would have been sent with, in order."""
    sent = []
    monkeypatch.setattr("apps.runs.dispatch.enqueue_run", sent.append)
    monkeypatch.setattr("apps.runs.dispatch.enqueue_manual_turn", sent.append)
    return sent


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123")


@pytest.fixture
def task(db):
    return Task.objects.create(
        suite="testsuite",
        operator="vadd",
        precision="fp32",
        title="Vector add",
        category="dense_linear_algebra",
        description="C = A + B",
        entry_point="vadd",
        interface="void vadd(const float* A, const float* B, float* C, int N)",
        complexity="N",
        sizes=[{"N": 1024}],
        outputs=["C"],
        atol=1e-4,
        rtol=1e-4,
        baseline_source="// baseline",
    )


@pytest.fixture
def make_run(task):
    from apps.runs.services import RunConfig, run_create

    def make(owner, **kwargs):
        return run_create(owner=owner, task=task, config=RunConfig(model="scripted"), dispatch=False, **kwargs)

    return make


# The browser tests' Chromium (Playwright drives Debian's), the bundle its pages load, and where screenshots go.
@pytest.fixture(scope="module")
def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (the .ci/run script installs Debian's chromium)")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    if not (ROOT / "static" / "dist" / ".built").is_file():
        pytest.fail("static/dist is not built: run `make static/dist/.built`")
    return path


@pytest.fixture(scope="module")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """docs/screenshots with UPDATE_SCREENSHOTS=1, else a temporary folder (the pages are still rendered)."""
    if os.environ.get("UPDATE_SCREENSHOTS"):
        target = ROOT / "docs" / "screenshots"
        target.mkdir(parents=True, exist_ok=True)
        return target
    return tmp_path_factory.mktemp("screenshots")
