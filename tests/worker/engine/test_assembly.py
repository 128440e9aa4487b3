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


def test_a_candidate_build_keeps_its_ptx_and_readable_sass(listed_tools, chain, shared_build_cache, tmp_path):
    built = build(VECTOR_ADD, "fp32", chain, CANDIDATE, None, work_dir=tmp_path / "w", harness_dir=HARNESS_DIR,
                  cache_dir=shared_build_cache)
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


# ---- source lines: nvdisasm -gi on the cubin and PTX .loc, with the real nvcc (sm_90, -lineinfo) --------

CANDIDATES = Path(__file__).parents[2] / "gpu_candidates"


def _compile(tmp_path: Path, name: str, lineinfo: bool = True) -> Path:
    import shutil
    import subprocess

    src = tmp_path / f"{name}.cu"
    shutil.copy(CANDIDATES / f"{name}.cu", src)
    flags = ["-lineinfo"] if lineinfo else []
    subprocess.run(["nvcc", "-c", "-O3", "-arch=sm_90", *flags, src.name, "-o", f"{name}.o"], cwd=tmp_path,
                   check=True, capture_output=True)
    return tmp_path / f"{name}.o"


def _line_of(source: Path, needle: str) -> int:
    return next(n for n, line in enumerate(source.read_text().splitlines(), start=1) if needle in line)


def test_sass_instructions_map_to_the_candidate_lines_they_come_from(listed_tools, tmp_path):
    obj = _compile(tmp_path, "softmax_fast")
    listing = assembly.dump(obj)
    assert listing.note == "" and "Function : _Z24softmax_kernel_optimizedPfPKfii" in listing.sass
    mapped = assembly.sass_line_map(listing.sass)
    assert mapped.mapped and not any("//##" in line for line in mapped.lines)
    by_line: dict[int, list[str]] = {}
    for text, source in zip(mapped.lines, mapped.source, strict=True):
        if source is not None:
            by_line.setdefault(source, []).append(text)
    src = tmp_path / "softmax_fast.cu"
    # The warp shuffle of the max reduction (an inlined __shfl_xor_sync from a CUDA header) maps to its call
    # site in the candidate, not to the header; the exp of pass 2 to its own line.
    shuffle = _line_of(src, "m = fmaxf(m, __shfl_xor_sync")
    assert any("SHFL.BFLY" in t for t in by_line[shuffle])
    assert any("MUFU.EX2" in t for t in by_line[_line_of(src, "s += expf(x[c] - m)")])
    assert all(1 <= n <= len(src.read_text().splitlines()) for n in by_line)
    # Labels and the function header belong to no line.
    assert all(s is None for t, s in zip(mapped.lines, mapped.source, strict=True) if "Function :" in t or
               t.startswith(".L_x_"))


def test_ptx_loc_directives_map_instructions_and_are_hidden(listed_tools, tmp_path):
    obj = _compile(tmp_path, "softmax_fast")
    ptx = assembly.ptx_line_map(assembly.dump(obj).ptx)
    assert ptx.mapped and not any(line.lstrip().startswith(".loc") for line in ptx.lines)
    src = tmp_path / "softmax_fast.cu"
    shuffle = _line_of(src, "m = fmaxf(m, __shfl_xor_sync")
    assert any("shfl.sync.bfly" in t for t, n in zip(ptx.lines, ptx.source, strict=True) if n == shuffle)
    assert all(n is None for t, n in zip(ptx.lines, ptx.source, strict=True) if t.lstrip().startswith((".reg", "$L")))


def test_a_build_without_lineinfo_lists_sass_without_source_lines(listed_tools, tmp_path):
    obj = _compile(tmp_path, "vector_add_fast", lineinfo=False)
    listing = assembly.dump(obj)
    assert "EXIT" in listing.sass and not assembly.sass_line_map(listing.sass).mapped


def test_the_candidate_build_keeps_line_markers_for_the_candidate_file(listed_tools, chain, shared_build_cache,
                                                                       tmp_path):
    built = build(VECTOR_ADD, "fp32", chain, CANDIDATE, None, work_dir=tmp_path / "w", harness_dir=HARNESS_DIR,
                  cache_dir=shared_build_cache)
    mapped = assembly.sass_line_map(built.candidate.sass)
    store = next(n for n, line in enumerate(CANDIDATE.splitlines(), start=1) if "C[i] = A[i] + B[i]" in line)
    assert any(n == store and "STG" in t for t, n in zip(mapped.lines, mapped.source, strict=True)), \
        "the default flags keep -lineinfo, so the store maps to its line"


def test_nvdisasm_inline_chains_resolve_to_the_compiled_file():
    raw = (
        '.text._Z1kv:\n'
        '\t//## File "/w/k.cu", line 3\n'
        '        /*0000*/                   MOV R1, c[0x0][0x28] ;\n'
        '\t//## File "/usr/include/sm_30_intrinsics.hpp", line 449 inlined at "/w/k.cu", line 7\n'
        '        /*0010*/                   SHFL.BFLY PT, R6, R5, 0x10, 0x1f ;\n'
        '.L_x_1:\n'
        '\t//## File "/usr/include/cuda_fp16.hpp", line 12\n'
        '        /*0020*/                   EXIT ;\n'
    )
    text = assembly.normalize_nvdisasm(raw)
    mapped = assembly.sass_line_map(text)
    pairs = [(t.strip().split()[1] if t.strip().startswith("/*") else t.strip(), n)
             for t, n in zip(mapped.lines, mapped.source, strict=True)]
    assert pairs == [("Function : _Z1kv", None), ("MOV", 3), ("SHFL.BFLY", 7), (".L_x_1:", None), ("EXIT", None)]
