"""Library references (reference.toml beside a spec): loaded with the spec, built with their own
libraries linked outside the candidate whitelist, checked and timed like a candidate."""

import shutil

import pytest

from tests.worker.conftest import CPU_TASKS
from worker.engine.results import Verdict
from worker.engine.taskspec import SpecError
from worker.formats.cuda.evaluation import evaluate, evaluate_reference
from worker.formats.cuda.spec import load_spec

# Host-only, like the CPU stand-in task; the never-taken cuBLAS call only links with -lcublas.
REFERENCE = """#include <cublas_v2.h>
extern "C" void scale_optimized(const float* X, float* Y, int N) {
    if (N < 0) { cublasHandle_t h; cublasCreate(&h); }
    for (int i = 0; i < N; ++i) Y[i] = 2.0f * X[i];
}
"""


@pytest.fixture
def task(tmp_path):
    folder = tmp_path / "cpu" / "scale"
    shutil.copytree(CPU_TASKS / "cpu" / "scale", folder)
    (folder / "reference.cu").write_text(REFERENCE)
    (folder / "reference.toml").write_text('name = "cuBLAS (test)"\nlibraries = ["cublas"]\nfp32 = "reference.cu"\n')
    return folder


def test_a_reference_is_loaded_with_its_spec(task):
    spec = load_spec(task / "spec.toml")
    assert spec.reference.name == "cuBLAS (test)" and spec.reference.libraries == ("cublas",)
    assert spec.reference_source("fp32") == task / "reference.cu" and spec.reference_source("bf16") is None


@pytest.mark.parametrize("text, field", [
    ('name = "x"\nlibraries = ["cudnn"]\nfp32 = "reference.cu"\n', "libraries"),
    ('name = "x"\nfp32 = "missing.cu"\n', "fp32"),
    ('name = "x"\nfp32 = "../reference.cu"\n', "fp32"),
    ('name = "x"\nlibrary = ["cublas"]\nfp32 = "reference.cu"\n', "library"),
    ('libraries = []\nfp32 = "reference.cu"\n', "name"),
])
def test_a_bad_reference_names_the_field(task, text, field):
    (task / "reference.toml").write_text(text)
    with pytest.raises(SpecError, match=field):
        load_spec(task / "spec.toml")


def test_the_reference_is_timed_like_a_candidate_with_its_library_linked(task, cpu_chain, cpu_options):
    spec = load_spec(task / "spec.toml")
    ev = evaluate_reference(spec, "fp32", cpu_options, chain=cpu_chain)
    assert (ev.verdict, ev.kind) == (Verdict.OK, "reference"), ev.reason
    assert ev.score is not None and all(s.candidate is not None for s in ev.sizes)


def test_a_candidate_may_not_link_the_references_library(task, cpu_chain, cpu_options):
    spec = load_spec(task / "spec.toml")
    # Using cuBLAS in the code is refused by the static checks, before any build.
    ev = evaluate(spec, "fp32", REFERENCE, "nvcc -O3 -lcublas", cpu_options, chain=cpu_chain)
    assert ev.verdict == Verdict.REJECTED and ev.compile is None, ev.reason
    assert ev.reason.startswith("RULE forbidden-library") and "cublas" in ev.reason
    # Asking for the library in the flags alone: the flags are refused, the build uses the defaults.
    plain = 'extern "C" void scale_optimized(const float* X, float* Y, int N) {\n' \
            "    for (int i = 0; i < N; ++i) Y[i] = 2.0f * X[i];\n}\n"
    ev = evaluate(spec, "fp32", plain, "nvcc -O3 -lcublas", cpu_options, chain=cpu_chain)
    assert ev.verdict == Verdict.OK, ev.reason
    assert "-lcublas" not in ev.compile.command
    assert any(n.startswith("compile flags rejected (library '-lcublas' is not allowed") for n in ev.notes), ev.notes


def test_a_task_without_a_reference_says_so(cpu_chain, cpu_options):
    spec = load_spec(CPU_TASKS / "cpu" / "scale" / "spec.toml")
    ev = evaluate_reference(spec, "fp32", cpu_options, chain=cpu_chain)
    assert ev.verdict == Verdict.REJECTED and "no library reference" in ev.reason
