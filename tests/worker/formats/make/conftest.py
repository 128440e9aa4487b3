"""Fixtures of the task.yaml runner's tests."""

import pytest

from worker.formats.cuda.evaluation import EvalOptions


@pytest.fixture
def options(tmp_path) -> EvalOptions:
    """Timing cache and GPU locks in the test's own folder."""
    return EvalOptions(timing_cache=str(tmp_path / "timings"), lock_dir=str(tmp_path / "locks"))
