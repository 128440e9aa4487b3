"""PTX and SASS listings of built objects (worker/engine/assembly.py), with the real nvcc and cuobjdump."""

from pathlib import Path

import pytest

from worker.engine import assembly
from worker.formats.cuda.build import HARNESS_DIR, build
from worker.formats.cuda.spec import load_spec

VECTOR_ADD = load_spec(Path(__file__).parents[3] / "tasks" / "mskernelbench" / "vector_add" / "spec.toml")
CANDIDATE = """
__global__ void add_twice_kernel(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}
extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    add_twice_kernel<<<(N + 255) / 256, 256>>>(A, B, C, N);
}
"""


@pytest.fixture(scope="module")
def listed_tools():
    cuobjdump, nvdisasm = assembly.tools()
    assert cuobjdump and nvdisasm, "cuobjdump/nvdisasm missing: `make .cuda-libs/.ready` fetches them"


def test_a_candidate_build_keeps_its_ptx_and_readable_sass(listed_tools, chain, tmp_path):
    built = build(VECTOR_ADD, "fp32", chain, CANDIDATE, None, work_dir=tmp_path / "w", harness_dir=HARNESS_DIR,
                  cache_dir=tmp_path / "cache")
    assert built.ok, built.failure and built.failure.log
    cand = built.candidate
    assert ".visible .entry" in cand.ptx and "add_twice_kernel" in cand.ptx and ".target sm_" in cand.ptx
    assert "Function : " in cand.sass and "add_twice_kernel" in cand.sass and "EXIT" in cand.sass
    assert "/* 0x" not in cand.sass and "Fatbin" not in cand.sass  # encodings and banners stripped
    assert cand.assembly_note == ""
    assert "Function : " in built.baseline.sass  # the baseline turn shows its own listing
    assert built.harness.sass == ""  # the harness is never listed


def test_a_cached_build_returns_the_same_listing(listed_tools, chain, tmp_path):
    args = dict(harness_dir=HARNESS_DIR, cache_dir=tmp_path / "cache")
    first = build(VECTOR_ADD, "fp32", chain, CANDIDATE, None, work_dir=tmp_path / "a", **args)
    second = build(VECTOR_ADD, "fp32", chain, CANDIDATE, None, work_dir=tmp_path / "b", **args)
    assert "candidate" in second.cache_hits
    assert (second.candidate.ptx, second.candidate.sass) == (first.candidate.ptx, first.candidate.sass)


def test_a_missing_cuobjdump_leaves_a_note_not_a_failure(chain, tmp_path, monkeypatch):
    monkeypatch.setattr(assembly, "tools", lambda: (None, None))
    built = build(VECTOR_ADD, "fp32", chain, CANDIDATE, None, work_dir=tmp_path / "w", harness_dir=HARNESS_DIR,
                  cache_dir=tmp_path / "cache")
    assert built.ok and built.candidate.sass == "" and "cuobjdump is not installed" in built.candidate.assembly_note


def test_long_listings_are_cut_with_a_marker():
    notes = []
    text = assembly._cap("x" * (assembly.CAP + 10), "SASS", notes)
    assert text.endswith("[... SASS cut at 200 KiB]") and notes == ["SASS cut at 200 KiB of 200 KiB"]


def test_sass_cleaning_drops_encodings_and_blank_runs():
    raw = ("\nFatbin elf code:\n================\narch = sm_90\n\n\n        Function : k\n"
           "        /*0000*/  EXIT ;   /* 0x000000000000794d */\n"
           "                          /* 0x000fea0003800000 */\n")
    assert assembly.clean_sass(raw) == "        Function : k\n        /*0000*/  EXIT ;"
