import json
import math

from worker.engine.results import (
    Bottleneck,
    CompileResult,
    CrashInfo,
    Evaluation,
    KernelResources,
    Profile,
    SizeResult,
    TimingStats,
    Verdict,
    first_of,
)


def full_evaluation() -> Evaluation:
    timing = TimingStats(50, 1.5, 1.4, 1.2, 2.0, 0.1, 0.066, 1.6)
    return Evaluation(
        task="vector_add",
        precision="bf16",
        verdict=Verdict.OK,
        reason="correct at every size and seed",
        sizes=(
            SizeResult(
                0,
                {"N": 1024},
                1024.0,
                correct=True,
                inputs_unchanged=True,
                baseline=timing,
                candidate=timing,
                speedup=1.0,
                speedup_median=1.0,
                flags=("CV>5% at N=1024",),
            ),
            SizeResult(
                1,
                {"N": 4096.5},
                4096.5,
                correct=False,
                inputs_unchanged=True,
                first_mismatch={"seed": 1, "index": 3, "got": "nan"},
                out_of_bounds="write past the end",
            ),
        ),
        score=1.25,
        geomean_speedup=1.1,
        flags=("CV>5% at N=1024",),
        notes=("compile flags rejected",),
        static_violations=("RULE no-main: line 1 defines main()",),
        compile=CompileResult(
            "candidate",
            True,
            "nvcc -O3 -c candidate.cu",
            "ptxas info ...",
            (KernelResources("k_kernel_optimized", "_Z1kv", "sm_90", 32, 1024, 0, 1, 0, 8, 8),),
            cached=True,
            seconds=1.5,
        ),
        crash=CrashInfo("illegal_address", "an illegal memory access was encountered", 1, 1, None, "tail"),
        memcheck_log="========= Invalid __global__ read",
        profiles=(
            Profile(
                0,
                {"N": 1024},
                "k_kernel_optimized",
                Bottleneck.MEMORY_BANDWIDTH,
                {"DRAM Throughput": {"value": 77.0, "unit": "%"}},
                {"GPU Speed Of Light Throughput": {"DRAM Throughput": {"value": 77.0, "unit": "%"}}},
                5000.0,
                "filtered",
                "2025.3",
                "H100",
            ),
        ),
        gpu="NVIDIA H100 80GB HBM3",
        toolchain={"nvcc_version": "V13.0.88"},
        baseline_cached=True,
        phases={"compile": 1.0},
    )


def test_evaluation_round_trips_through_json():
    original = full_evaluation()
    text = original.to_json()
    again = Evaluation.from_json(text)
    assert again == original
    assert isinstance(again.verdict, Verdict) and isinstance(again.profiles[0].bottleneck, Bottleneck)
    assert json.loads(text)["verdict"] == "ok"


def test_non_finite_numbers_serialize_as_strings_not_invalid_json():
    ev = Evaluation(
        "t",
        "fp32",
        Verdict.INCORRECT,
        sizes=(
            SizeResult(
                0, {"N": 1}, 1.0, False, True, {"expected": 1.0, "got": math.nan, "abs_err": math.inf}
            ),
        ),
    )
    text = ev.to_json()
    json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))  # strict JSON
    mismatch = json.loads(text)["sizes"][0]["first_mismatch"]
    assert mismatch["got"] == "nan" and mismatch["abs_err"] == "inf"


def test_size_label_prints_integers_without_a_decimal_point():
    assert SizeResult(0, {"M": 128.0, "eps": 0.5}, 1.0).label == "M=128,eps=0.5"


def test_a_list_of_messages_shows_the_first_and_counts_the_rest():
    assert first_of(["only"]) == "only"
    assert first_of(["a", "b", "c"]) == "a (+2 more)"
    assert first_of(["a", "b", "c", "d", "e"], 3) == "a, b, c (+2 more)"
    assert first_of(["a", "b"], 3) == "a, b"
