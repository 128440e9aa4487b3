"""The shipped task library (tasks/<suite>/<op>): every spec valid, every task builds (no GPU needed)."""

from pathlib import Path

import pytest

from testing.gpu_candidates import CANDIDATE_FILES, LIBRARY, expected_verdict, task_of
from worker.engine.results import Verdict
from worker.engine.taskspec import PRECISIONS
from worker.formats.cuda.build import HARNESS_DIR, build
from worker.formats.cuda.evaluation import EvalOptions, evaluate
from worker.formats.cuda.static_checks import baseline_kernel_names
from worker.registry import discover_tasks

TASKS = Path(__file__).parents[4] / "tasks"
FOUND = discover_tasks(TASKS, backends=("cuda",))
CASES = [(s, p) for s in FOUND.specs for p in PRECISIONS if p in s.interfaces]
needs_tasks = pytest.mark.skipif(not CASES, reason="no task specs under tasks/ yet")


def test_every_task_spec_is_valid():
    if not FOUND.specs and not FOUND.errors:
        pytest.skip("no task specs under tasks/ yet")
    assert [str(e) for e in FOUND.errors] == []


@needs_tasks
@pytest.mark.parametrize(
    ("spec", "precision"), CASES or [(None, None)], ids=[f"{s.name}-{p}" for s, p in CASES] or ["none"]
)
def test_task_compiles_and_links_for_the_worker_arch(spec, precision, chain, shared_build_cache, tmp_path):
    built = build(
        spec, precision, chain, None, work_dir=tmp_path, harness_dir=HARNESS_DIR, cache_dir=shared_build_cache
    )
    failure = built.failure
    assert built.ok, f"{failure.role} failed:\n{failure.command}\n{failure.log}" if failure else "link failed"
    assert built.baseline.resources, "ptxas -v reported no kernel for the baseline"


REFERENCES = [(s, p) for s, p in CASES if s.reference_source(p) is not None]


@pytest.mark.skipif(not REFERENCES, reason="no library references yet")
@pytest.mark.parametrize(
    ("spec", "precision"), REFERENCES or [(None, None)], ids=[f"{s.name}-{p}" for s, p in REFERENCES] or ["none"]
)
def test_library_reference_compiles_and_links_with_its_libraries(spec, precision, chain, shared_build_cache,
                                                                  tmp_path):
    # cuBLAS/cuSPARSE come from the toolkit or from `make .cuda-libs/.ready` (KW_CUDA_EXTRA).
    ev = evaluate_reference_compile(spec, precision, chain, shared_build_cache, tmp_path)
    log = ev.compile.log if ev.compile else ""
    assert ev.verdict == Verdict.OK and ev.kind == "reference", f"{ev.reason}\n{log}"


def evaluate_reference_compile(spec, precision, chain, cache, tmp_path):
    from worker.formats.cuda.evaluation import evaluate_reference

    options = EvalOptions(build_cache=str(cache), lock_dir=str(tmp_path / "locks"), timing_cache=str(tmp_path / "t"))
    return evaluate_reference(spec, precision, options, compile_only=True, chain=chain, work_dir=tmp_path / "w")


@needs_tasks
@pytest.mark.parametrize(
    ("spec", "precision"), CASES or [(None, None)], ids=[f"{s.name}-{p}" for s, p in CASES] or ["none"]
)
def test_baseline_kernels_are_found_for_the_calls_baseline_rule(spec, precision):
    # The static checks block the baseline's kernels by name; a baseline without any found
    # would leave that rule blind.
    assert baseline_kernel_names(spec.baseline_source(precision))


@pytest.mark.skipif(not CANDIDATE_FILES, reason="no GPU candidates yet")
@pytest.mark.parametrize("path", CANDIDATE_FILES, ids=[p.name for p in CANDIDATE_FILES])
def test_gpu_candidate_reaches_the_gpu_or_is_rejected_as_expected(path, chain, shared_build_cache, tmp_path):
    # The part of each GPU candidate's story that needs no GPU: static checks and the build.
    task, precision = task_of(path)
    options = EvalOptions(build_cache=str(shared_build_cache))
    ev = evaluate(
        LIBRARY[task],
        precision,
        path.read_text(encoding="utf-8"),
        None,
        options,
        compile_only=True,
        chain=chain,
        work_dir=tmp_path,
    )
    if expected_verdict(path) == Verdict.REJECTED:
        assert ev.verdict == Verdict.REJECTED and ev.compile is None
    elif expected_verdict(path) == Verdict.COMPILE_ERROR:
        assert ev.verdict == Verdict.COMPILE_ERROR and ev.compile.role == "candidate" and not ev.compile.ok
    else:
        assert ev.verdict == Verdict.OK and ev.kind == "compile_only", ev.reason
