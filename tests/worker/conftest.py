"""Fixtures for the evaluation engine's tests.

Builds use the real nvcc (compile-only, sm_90 unless KW_CUDA_ARCH says otherwise); the end-to-end
tests run a CPU stand-in task (fixtures/tasks/cpu/scale) whose harness speaks the real protocol on
the host, so the whole pipeline runs without a GPU. GPU tests carry `@pytest.mark.gpu` and are
skipped when `nvidia-smi -L` fails.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from worker.engine import toolchain as tc
from worker.engine.gpu import GpuInfo
from worker.formats.cuda.evaluation import EvalOptions
from worker.formats.cuda.spec import TaskSpec, load_spec

FIXTURES = Path(__file__).parent / "fixtures"
CPU_TASKS = FIXTURES / "tasks"
CPU_HARNESS = FIXTURES / "harness"
CANDIDATES = FIXTURES / "candidates"
# Stands in for a GPU so the orchestration runs: the CPU harness never touches one.
CPU_STAND_IN = GpuInfo(0, "CPU stand-in", "CPU-STAND-IN", "9.0", 0, "")


def pytest_configure(config):
    # Also declared in pyproject.toml; kept here so this folder runs on its own too.
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (skipped without one)")


def gpu_present() -> bool:
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def pytest_collection_modifyitems(config, items):
    if gpu_present():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU (nvidia-smi -L failed)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def chain() -> tc.Toolchain:
    found = tc.detect()
    if not found.nvcc:
        pytest.skip("nvcc not found")
    return found


@pytest.fixture(scope="session")
def nvcc(chain) -> str:
    return chain.nvcc


@pytest.fixture(scope="session")
def cpu_chain(chain) -> tc.Toolchain:
    """The real compiler with the CPU stand-in as 'GPU' and no profiler or sanitizer."""
    return dataclasses.replace(chain, gpu=CPU_STAND_IN, ncu=None, sanitizer=None)


@pytest.fixture(scope="session")
def no_gpu_chain(chain) -> tc.Toolchain:
    return dataclasses.replace(chain, gpu=None, gpu_reason="nvidia-smi not found (test)")


@pytest.fixture(scope="session")
def scale_spec() -> TaskSpec:
    return load_spec(CPU_TASKS / "cpu" / "scale" / "spec.toml")


@pytest.fixture(scope="session")
def shared_build_cache(tmp_path_factory) -> Path:
    """One build cache per test session: each object compiles once. KW_TEST_BUILD_CACHE keeps it
    across sessions (the keys cover every input, so reuse is safe). Under pytest-xdist the workers of one
    session share it (its entries are written atomically: docs/evaluation.md, "Build and caching")."""
    kept = os.environ.get("KW_TEST_BUILD_CACHE")
    if kept:
        return Path(kept)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the session's temporary root, above each worker's own
        shared = tmp_path_factory.getbasetemp().parent / "build-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("build-cache")


@pytest.fixture
def cpu_options(shared_build_cache, tmp_path) -> EvalOptions:
    return EvalOptions(
        harness_dir=str(CPU_HARNESS),
        build_cache=str(shared_build_cache),
        timing_cache=str(tmp_path / "timings"),
        lock_dir=str(tmp_path / "locks"),
        iters=10,
        check_timeout_s=20,
        cache_max_cv=math.inf,  # the stand-in's microsecond CPU times are noisy by nature; the cache's tests limit it
    )


def candidate(name: str) -> str:
    return (CANDIDATES / name).read_text(encoding="utf-8")
