"""bench/agreement.py without a GPU: extraction, the FP32 harness derivation, parsing their output, P and
the table, on a tiny fake checkout of the benchmark's demo repository written here (none of its code)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[4]
_spec = importlib.util.spec_from_file_location("agreement", REPO / "bench" / "agreement.py")
agreement = importlib.util.module_from_spec(_spec)
sys.modules["agreement"] = agreement
_spec.loader.exec_module(agreement)

# A fake BF16 test program in the benchmark's layout: includes, a compare helper, the marked
# optimized section, the baseline renamed _origin, then the harness (sizes, timing, check).
TEST_BF16 = r"""#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <math.h>

bool close_enough(__nv_bfloat16 a, __nv_bfloat16 b, float tol) {
    return fabsf(__bfloat162float(a) - __bfloat162float(b)) < tol;
}

// ==== OPTIMIZED KERNEL START ====
__global__ void vector_add_bf16_kernel_optimized(const __nv_bfloat16* A, const __nv_bfloat16* B,
                                                 __nv_bfloat16* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = __float2bfloat16(__bfloat162float(A[i]) + __bfloat162float(B[i]));
}
extern "C" void vector_add_bf16_optimized(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N) {
    vector_add_bf16_kernel_optimized<<<(N + 255) / 256, 256>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
// ==== OPTIMIZED KERNEL END ====

__global__ void slow_add(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N) {
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        C[i] = __float2bfloat16(__bfloat162float(A[i]) + __bfloat162float(B[i]));
}
extern "C" void vector_add_bf16_origin(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N) {
    const char* brace = "}";  // a brace in a string must not end the function
    (void)brace;
    slow_add<<<1, 1024>>>(A, B, C, N);
    cudaDeviceSynchronize();
}

int main() {
    int sizes[2] = {1024, 4096};
    for (int s = 0; s < 2; ++s) {
        int N = sizes[s];
        __nv_bfloat16 *A, *B, *C, *D;
        cudaMalloc(&A, N * sizeof(__nv_bfloat16)); cudaMalloc(&B, N * sizeof(__nv_bfloat16));
        cudaMalloc(&C, N * sizeof(__nv_bfloat16)); cudaMalloc(&D, N * sizeof(__nv_bfloat16));
        vector_add_bf16_origin(A, B, C, N);
        vector_add_bf16_optimized(A, B, D, N);
        __nv_bfloat16 h = __float2bfloat16(1.0f);
        printf("Test case size: N: %d. Complexity: %d\n", N, N);
        if (!close_enough(h, h, 1e-2f)) { printf("Output mismatch at index 0\n"); return 1; }
        printf("Speedup ratio: %.2f\n", 2.0);
    }
    return 0;
}
"""

FP32_BASELINE = r"""#include <cuda_runtime.h>
__global__ void slow_add_fp32(const float* A, const float* B, float* C, int N) {
    for (int i = threadIdx.x; i < N; i += blockDim.x) C[i] = A[i] + B[i];
}
extern "C" void vector_add(const float* A, const float* B, float* C, int N) {
    slow_add_fp32<<<1, 1024>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
"""

FP32_OPTIMIZED = r"""#include <cuda_runtime.h>
__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}
extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    vector_add_kernel_optimized<<<(N + 255) / 256, 256>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
"""


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "msk"
    for rel, text in {
        "optimized/bf16/test_vector_add_bf16.cu": TEST_BF16,
        "optimized/fp32/vector_add.cu": FP32_OPTIMIZED,
        "origin/fp32/vector_add.cu": FP32_BASELINE,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_bf16_candidate_is_the_marked_section_after_the_files_includes():
    cand = agreement.bf16_candidate(TEST_BF16, "x.cu")
    assert "#include <cuda_bf16.h>" in cand and "#include <stdio.h>" in cand
    assert "vector_add_bf16_optimized" in cand
    assert "origin" not in cand and "close_enough" not in cand and "int main" not in cand


def test_a_test_file_without_markers_is_an_extraction_error():
    with pytest.raises(agreement.ExtractionError):
        agreement.bf16_candidate("int main() {}\n")


def test_function_end_skips_braces_in_strings_and_comments():
    text = 'extern "C" void f() { const char* s = "}"; /* } */ // }\n if (1) { } }\nint after;'
    end = agreement.function_end(text, 0)
    assert text[end:].strip() == "int after;"


def test_fp32_harness_swaps_in_the_fp32_kernels_and_maps_the_rest_to_float():
    derived = agreement.derive_fp32_harness(TEST_BF16, "vector_add", FP32_BASELINE, FP32_OPTIMIZED)
    assert "__nv_bfloat16" not in derived and "__bfloat162float" not in derived
    assert "vector_add_bf16_" not in derived
    assert 'extern "C" void vector_add_origin(const float* A' in derived
    assert 'extern "C" void vector_add_optimized(' in derived
    assert "slow_add_fp32" in derived and "slow_add<<<" not in derived  # the BF16 baseline is gone
    assert "bool close_enough(float a, float b, float tol)" in derived
    assert "vector_add_origin(A, B, C, N);" in derived and "vector_add_optimized(A, B, D, N);" in derived
    # the markers stay, so the derived file can be extracted like a published one
    assert agreement.split_test(derived)[1].strip() == FP32_OPTIMIZED.strip()


def test_parse_output_pairs_sizes_with_speedups_and_finds_a_mismatch():
    out = (
        "===================\nTest case size: N: 1024. Complexity: 1024\nSpeedup ratio: 2.00\n"
        "===================\nTest case size: N: 4096. Complexity: 4096\n"
        "Output mismatch at index 3: original 1.0, optimized 2.0\n"
    )
    sizes, mismatch = agreement.parse_output(out)
    assert [s.params for s in sizes] == [{"N": 1024.0}, {"N": 4096.0}]
    assert [s.speedup for s in sizes] == [2.0, None]
    assert mismatch.startswith("Output mismatch at index 3")


def test_their_p_uses_the_tasks_complexity_weights():
    from worker.formats.cuda.spec import load_spec

    spec = load_spec(REPO / "tasks" / "mskernelbench" / "vector_add" / "spec.toml")
    sizes, _ = agreement.parse_output(
        "Test case size: N: 1024. Complexity: 1024\nSpeedup ratio: 1.0\n"
        "Test case size: N: 4096. Complexity: 4096\nSpeedup ratio: 6.0\n"
        "Test case size: N: 3. Complexity: -7\nSpeedup ratio: 100\n"  # not a size of the spec
    )
    agreement.weigh(spec, sizes)
    assert [s.spec_index for s in sizes] == [0, 1, None]
    assert [s.weight_from for s in sizes] == ["spec size", "spec size", "spec formula"]
    p = agreement.weighted_p([(s.weight, s.speedup) for s in sizes])
    assert p == pytest.approx((1024 * 1 + 4096 * 6 + 3 * 100) / (1024 + 4096 + 3))


def test_weights_fall_back_to_the_printed_complexity_and_then_to_one():
    from worker.formats.cuda.spec import load_spec

    spec = load_spec(REPO / "tasks" / "mskernelbench" / "matrix_mul" / "spec.toml")
    sizes, _ = agreement.parse_output(
        "Test case size: rows: 8. Complexity: 640\nSpeedup ratio: 1\n"
        "Test case size: rows: 8. Complexity: -5\nSpeedup ratio: 1\n"
    )
    agreement.weigh(spec, sizes)
    assert [(s.weight, s.weight_from) for s in sizes] == [(640.0, "printed"), (1.0, "none")]


def test_table_lists_verdicts_reasons_and_ps():
    rows = [
        agreement.Item("vector_add", "bf16", their_verdict="ok", kw_verdict="ok", their_p=3.0, kw_p=2.5, ratio=2.5 / 3),
        agreement.Item("spmv_coo", "bf16", their_verdict="ok", kw_verdict="rejected",
                       kw_reason="RULE kernel-naming: spmv_coo_float_kernel"),
    ]
    table = agreement.format_table(rows, "bf16")
    lines = table.splitlines()
    assert lines[0] == "== BF16 =="
    assert lines[1].split(" | ")[0].strip() == "operator" and "ratio" in lines[1]
    assert "3.00" in lines[3] and "2.50" in lines[3] and "0.83" in lines[3]
    assert "rejected (RULE kernel-naming" in lines[4]


def test_compile_only_run_writes_candidates_harnesses_and_reports(checkout, tmp_path):
    # A stand-in for nvcc that "builds" any source into an executable copy: the run needs no toolkit.
    fake = tmp_path / "fake-nvcc"
    fake.write_text('#!/bin/sh\nfor a; do prev="$cur"; cur="$a"; [ "$prev" = "-o" ] && out="$a"; done\n'
                    ': > "$out"\nchmod +x "$out"\n')
    fake.chmod(0o755)
    out = tmp_path / "out"
    args = agreement.parse_args(["--checkout", str(checkout), "--out", str(out), "--ops", "vector_add",
                                 "--compile-only", "--skip-kernelweb", "--nvcc", str(fake), "--jobs", "2"])
    assert agreement.Agreement(args).main() == 0
    assert (out / "candidates" / "vector_add_optimized.cu").read_text() == FP32_OPTIMIZED
    assert "vector_add_bf16_optimized" in (out / "candidates" / "vector_add_bf16_optimized.cu").read_text()
    assert (out / "build" / "src" / "test_vector_add.cu").exists()
    data = json.loads((out / "agreement.json").read_text())
    assert {(d["op"], d["precision"], d["their_verdict"]) for d in data} == {
        ("vector_add", "fp32", "built"), ("vector_add", "bf16", "built")}
    assert (out / "agreement.csv").read_text().startswith("operator,precision,their_verdict")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_derived_fp32_harness_and_the_published_bf16_one_compile(checkout, tmp_path):
    out = tmp_path / "out"
    args = agreement.parse_args(["--checkout", str(checkout), "--out", str(out), "--ops", "vector_add",
                                 "--compile-only", "--skip-kernelweb", "--jobs", "2"])
    agreement.Agreement(args).main()
    data = {d["precision"]: d for d in json.loads((out / "agreement.json").read_text())}
    assert data["fp32"]["their_verdict"] == "built", data["fp32"]["their_reason"]
    assert data["bf16"]["their_verdict"] == "built", data["bf16"]["their_reason"]


def test_a_test_that_calls_the_baseline_under_its_own_name_is_derived_too():
    test = TEST_BF16.replace("vector_add_bf16_origin", "vector_add_bf16")
    derived = agreement.derive_fp32_harness(test, "vector_add", FP32_BASELINE, FP32_OPTIMIZED)
    assert "vector_add_origin(A, B, C, N);" in derived and "vector_add_bf16" not in derived.split("\n", 1)[1]


def test_cub_is_included_in_a_candidate_only_when_the_section_uses_it():
    test = TEST_BF16.replace("#include <stdio.h>", "#include <stdio.h>\n#include <cub/cub.cuh>")
    assert "cub/cub.cuh" not in agreement.bf16_candidate(test)
    uses = test.replace("int i = blockIdx.x", "using cub::Sum; int i = blockIdx.x")
    assert "#include <cub/cub.cuh>" in agreement.bf16_candidate(uses)


def test_gpu_workers_run_every_item_once_and_resume_keeps_finished_ones(checkout, tmp_path):
    # A stand-in for nvcc whose "binary" prints their harness's output and the GPU it was given.
    fake = tmp_path / "fake-nvcc"
    fake.write_text('#!/bin/sh\nfor a; do prev="$cur"; cur="$a"; [ "$prev" = "-o" ] && out="$a"; done\n'
                    'printf \'#!/bin/sh\\necho "Test case size: N: 1024. Complexity: 1024"\\n'
                    'echo "Speedup ratio: 2.0"\\necho "gpu $CUDA_VISIBLE_DEVICES"\\n\' > "$out"\nchmod +x "$out"\n')
    fake.chmod(0o755)
    out = tmp_path / "out"
    common = ["--checkout", str(checkout), "--out", str(out), "--ops", "vector_add", "--skip-kernelweb",
              "--nvcc", str(fake), "--jobs", "2", "--gpus", "0,1"]
    assert agreement.Agreement(agreement.parse_args(common)).main() == 0
    data = json.loads((out / "agreement.json").read_text())
    assert len(data) == 2 and all(d["their_verdict"] == "ok" and d["their_p"] == 2.0 for d in data)
    for d in data:  # each item ran on the GPU its worker owns, and the record says which
        log = (out / "theirs" / f"vector_add_{d['precision']}.log").read_text()
        assert d["gpu"] in ("0", "1") and f"gpu {d['gpu']}\n" in log, log

    # Mark one item finished on both sides: --resume keeps it as it is and runs only the other.
    for d in data:
        if d["precision"] == "fp32":
            d.update(kw_verdict="ok", their_reason="kept from the first run")
    (out / "agreement.json").write_text(json.dumps(data))
    assert agreement.Agreement(agreement.parse_args([*common, "--resume"])).main() == 0
    again = {d["precision"]: d for d in json.loads((out / "agreement.json").read_text())}
    assert again["fp32"]["their_reason"] == "kept from the first run"
    assert again["bf16"]["their_verdict"] == "ok" and again["bf16"]["their_reason"] == ""


def _run(p, cvs, ms=0.02, verdict="ok"):
    return {"verdict": verdict, "reason": "", "p": p, "seconds": 1.0,
            "sizes": [{"index": k, "ms": ms, "cv": cv} for k, cv in enumerate(cvs)]}


def test_repeat_table_gives_each_candidates_spread_of_p_and_its_noisy_sizes():
    steady = agreement.Item("vector_add", "fp32", kw_verdict="ok", kw_runs=[_run(2.0, [0.01]), _run(2.02, [0.015])],
                            kw_repeat=0.01)
    noisy = agreement.Item("rope", "fp32", kw_verdict="ok", kw_runs=[_run(1.5, [0.01, 0.03]), _run(1.62, [0.01, 0.01])],
                           kw_repeat=0.08)
    short = agreement.Item("relu", "fp32", kw_verdict="ok", kw_runs=[_run(1.0, [0.5], ms=0.005)] * 2, kw_repeat=0.0)
    refused = agreement.Item("top_k", "fp32", kw_verdict="incorrect", kw_runs=[_run(None, [], verdict="incorrect")] * 2)
    assert agreement.noisy_sizes(noisy) == (1, 2)  # the worse run's CV counts
    assert agreement.noisy_sizes(short) == (0, 0)  # a 5 us call is not held to the CV goal
    table = agreement.format_repeat([steady, noisy, short, refused], "fp32")
    assert "| vector_add | ok, ok | 2.000 / 2.020 | 1.00% | 0 of 1 |" in table
    assert "| rope | ok, ok | 1.500 / 1.620 | 8.00% | 1 of 2 |" in table
    assert "| top_k | incorrect, incorrect |  /  | - | 0 of 0 |" in table
    assert "P within 2 % for 2 of 3 candidates accepted every time (67 %); CV of 2 % or more at 1 of 3 sizes" in table


def test_repeat_evaluates_the_candidate_again_in_new_processes_and_resume_wants_every_run(checkout, tmp_path,
                                                                                          monkeypatch):
    args = agreement.parse_args(["--checkout", str(checkout), "--out", str(tmp_path), "--ops", "vector_add",
                                 "--precisions", "fp32", "--skip-theirs", "--repeat", "3"])
    runner = agreement.Agreement(args)
    outs, ps = [], iter([2.0, 2.1, 1.9])

    def once(item, compile_only, env, out):  # `worker eval` needs a GPU: each call stands for one process
        outs.append(out.name)
        item.kw_verdict, item.kw_reason, item.kw_p, item.kw_seconds = "ok", "", next(ps), 1.0
        item.kw_sizes = [{"index": 0, "candidate_ms": 0.02, "candidate_cv": 0.01}]

    monkeypatch.setattr(runner, "_kernelweb_once", once)
    item = agreement.Item("vector_add", "fp32", candidate="c.cu")
    runner.kernelweb(item, False)
    assert outs == ["vector_add_fp32.json", "vector_add_fp32.2.json", "vector_add_fp32.3.json"]
    assert [r["p"] for r in item.kw_runs] == [2.0, 2.1, 1.9] and item.kw_p == 2.0
    assert item.kw_repeat == pytest.approx(0.05)  # the largest |P_k / P_1 - 1|
    assert item.done(theirs=False, repeat=3) and not item.done(theirs=False, repeat=4)
    assert not item.done(theirs=True, repeat=3)  # their harness has not run
