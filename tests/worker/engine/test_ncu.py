from pathlib import Path

import numpy as np
import pytest

from worker.engine import ncu
from worker.engine.results import Bottleneck

# Real `ncu --csv` output from an H100 (vector add, 16M elements), copied from the shared fixtures.
NCU_FIXTURES = Path(__file__).parents[1] / "fixtures" / "ncu"


def fixture_text(name: str) -> str:
    return (NCU_FIXTURES / name).read_text(encoding="utf-8")


def test_parses_the_h100_details_csv_into_one_launch_with_every_section():
    (vadd,) = ncu.parse_details_csv(fixture_text("vadd_h100_details.csv"))
    assert vadd.kernel == "vadd"
    assert vadd.block == "(256, 1, 1)" and vadd.grid == "(65536, 1, 1)"
    assert set(vadd.metrics) == {
        ncu.SOL,
        ncu.CWA,
        ncu.MWA,
        "Occupancy",
        "Scheduler Statistics",
        "Warp State Statistics",
    }
    assert vadd.value(ncu.COMPUTE_TH) == pytest.approx(40.34)
    assert vadd.value(ncu.DRAM_TH) == pytest.approx(77.29)
    assert vadd.value(ncu.DURATION) == pytest.approx(73824.0)  # "73,824" ns: thousands separator
    # The same metric name in two sections stays apart: % in Speed Of Light, byte/s in Memory Workload.
    assert vadd.metrics[ncu.SOL]["Memory Throughput"] == {"value": 77.29, "unit": "%"}
    assert vadd.metrics[ncu.MWA]["Memory Throughput"]["value"] == pytest.approx(2_589_565_669_700.91)
    assert vadd.metrics[ncu.MWA]["Local Memory Spilling Request Overhead"]["value"] == "no data"


def test_parses_several_launches_and_ignores_interleaved_program_output():
    text = fixture_text("vadd_h100_details.csv")
    lines = text.splitlines()
    rows = [ln for ln in lines if ln.startswith('"0",')]
    second = [ln.replace('"0",', '"1",', 1).replace("vadd(", "other_kernel_optimized(") for ln in rows]
    mixed = "\n".join(lines + ["kernel printf: hello", '==PROF== Profiling "other": 0%'] + second)
    launches = ncu.parse_details_csv(mixed)
    assert [k.kernel for k in launches] == ["vadd", "other_kernel_optimized"]
    assert launches[1].value(ncu.COMPUTE_TH) == pytest.approx(40.34)


def test_parses_the_h100_raw_csv_and_maps_the_classification_axes():
    (raw,) = ncu.parse_raw_csv(fixture_text("vadd_h100_raw.csv"))
    assert raw.kernel == "vadd"
    assert raw.metrics["raw"]["launch__grid_size"]["value"] == 65536.0
    assert raw.metrics["raw"]["launch__registers_per_thread"]["unit"] == "register/thread"
    view = ncu.details_view(raw)
    assert view.value(ncu.COMPUTE_TH) == pytest.approx(40.41)
    assert view.value(ncu.DRAM_TH) == pytest.approx(77.47)
    assert view.value(ncu.MEMORY_TH) == pytest.approx(77.47)
    assert view.value(ncu.DURATION) == pytest.approx(73632.0)


def test_returns_nothing_for_output_without_a_csv_header():
    assert ncu.parse_details_csv("==PROF== No kernels were profiled.\n") == []


def test_vadd_is_compute_bound_under_the_papers_rule():
    # Compute (SM) Throughput 40.34% > 30% decides it, although DRAM runs at 77%:
    # Table 2 checks compute first.
    (vadd,) = ncu.parse_details_csv(fixture_text("vadd_h100_details.csv"))
    assert ncu.classify(vadd) == Bottleneck.COMPUTE


@pytest.mark.parametrize(
    ("compute", "dram", "memory", "expected"),
    [
        (30.01, 0.0, 0.0, Bottleneck.COMPUTE),
        (30.0, 29.99, 29.99, Bottleneck.MEMORY_LATENCY),  # exactly 30 is not above the threshold
        (10.0, 30.0, 10.0, Bottleneck.MEMORY_BANDWIDTH),  # exactly 30 is not below it either
        (10.0, 10.0, 30.0, Bottleneck.MEMORY_BANDWIDTH),
        (29.99, 90.0, 95.0, Bottleneck.MEMORY_BANDWIDTH),
        (0.0, 0.0, 0.0, Bottleneck.MEMORY_LATENCY),
    ],
)
def test_classifies_at_the_threshold_edges(compute, dram, memory, expected):
    assert ncu.classify_values(compute, dram, memory) == expected


def test_thresholds_are_configurable():
    t = ncu.Thresholds(compute=50.0, dram=80.0, memory=80.0)
    assert ncu.classify_values(40.34, 77.29, 77.29, t) == Bottleneck.MEMORY_LATENCY


@pytest.mark.parametrize(
    ("bottleneck", "names"),
    [
        (
            Bottleneck.COMPUTE,
            ["Duration", "Compute (SM) Throughput", "Issue Slots Busy", "Executed Ipc Active", "SM Busy"],
        ),
        (
            Bottleneck.MEMORY_LATENCY,
            ["Duration", "L2 Hit Rate", "L1/TEX Hit Rate", "Executed Ipc Elapsed", "Mem Busy"],
        ),
        (
            Bottleneck.MEMORY_BANDWIDTH,
            ["Duration", "DRAM Throughput", "Memory Throughput", "Max Bandwidth", "Mem Pipes Busy"],
        ),
    ],
)
def test_filters_to_the_table_2_metrics_of_the_class(bottleneck, names):
    (vadd,) = ncu.parse_details_csv(fixture_text("vadd_h100_details.csv"))
    filtered = ncu.filter_metrics(vadd, bottleneck)
    assert list(filtered) == names
    if bottleneck == Bottleneck.MEMORY_BANDWIDTH:
        assert filtered["Memory Throughput"]["unit"] == "%"  # the Speed Of Light one


def test_profile_keeps_full_metrics_beside_the_filtered_ones():
    (vadd,) = ncu.parse_details_csv(fixture_text("vadd_h100_details.csv"))
    profile = ncu.to_profile(vadd, 2, {"N": 16777216}, "full", tool_version="2025.3", gpu="H100")
    assert profile.bottleneck == Bottleneck.COMPUTE
    assert set(profile.metrics) < {m for section in profile.full_metrics.values() for m in section}
    assert profile.duration_ns == pytest.approx(73824.0)


def test_otsu_splits_bimodal_data_between_the_clusters():
    # Hand check: splitting after 14 gives means 12 and 52 with equal weights, between-class
    # variance 0.25 * 40^2 = 400, the largest of the five splits; midpoint (14 + 50) / 2 = 32.
    assert ncu.otsu_threshold([50, 12, 54, 10, 52, 14]) == pytest.approx(32.0)


def test_otsu_handles_unequal_clusters_and_constant_data():
    assert ncu.otsu_threshold([1, 2, 3, 4, 100]) == pytest.approx(52.0)
    assert ncu.otsu_threshold([7, 7, 7]) == 7.0
    rng = np.random.default_rng(0)
    data = np.concatenate([rng.normal(15, 3, 200), rng.normal(70, 5, 100)])
    assert 25 < ncu.otsu_threshold(data) < 60


def test_otsu_thresholds_report_the_class_distribution():
    samples = [(10, 80, 85), (12, 70, 75), (60, 20, 25), (70, 10, 15), (8, 9, 12), (11, 12, 10)]
    result = ncu.otsu_thresholds(samples)
    assert result.samples == 6
    assert result.thresholds.compute == pytest.approx(36.0)
    assert sum(result.distribution.values()) == 6
    assert result.distribution == {"compute_bound": 2, "memory_latency_bound": 2, "memory_bandwidth_bound": 2}


def test_ncu_command_collects_the_sections_of_each_profile_mode():
    filtered = ncu.ncu_argv("ncu", "filtered", "_optimized", from_start=False)
    assert filtered[:6] == ["ncu", "--csv", "--page", "details", "--print-units", "base"]
    assert [filtered[i + 1] for i, a in enumerate(filtered) if a == "--section"] == list(
        ncu.FILTERED_SECTIONS
    )
    assert "regex:_optimized" in filtered and "--profile-from-start" in filtered
    full = ncu.ncu_argv("ncu", "full", None, from_start=True)
    assert [full[i + 1] for i, a in enumerate(full) if a == "--section"] == list(ncu.FULL_SECTIONS)
    assert "--kernel-name" not in full and "--profile-from-start" not in full
    with pytest.raises(ValueError):
        ncu.sections_for("none")


def test_keeps_the_last_launch_of_each_kernel_when_profiling_from_the_start():
    mk = lambda i, name: ncu.KernelMetrics(i, name, name, "", "", {})  # noqa: E731
    kept = ncu.last_launch_per_kernel([mk(0, "a"), mk(1, "b"), mk(2, "a"), mk(3, "b")])
    assert [k.launch_id for k in kept] == [2, 3]


def test_thresholds_come_from_the_environment_when_set(monkeypatch):
    monkeypatch.setenv("KW_BOTTLENECK_THRESHOLDS", "38.16, 24.32,45.8")
    assert ncu.Thresholds.from_env() == ncu.Thresholds(38.16, 24.32, 45.8)
    from worker.formats.cuda.evaluation import EvalOptions

    assert EvalOptions().thresholds == ncu.Thresholds(38.16, 24.32, 45.8)
    monkeypatch.delenv("KW_BOTTLENECK_THRESHOLDS")
    assert EvalOptions().thresholds == ncu.Thresholds()


@pytest.mark.parametrize("raw", ["30,30", "a,b,c", "0,30,30", "30,30,100"])
def test_malformed_environment_thresholds_are_refused_with_the_expected_form(monkeypatch, raw):
    monkeypatch.setenv("KW_BOTTLENECK_THRESHOLDS", raw)
    with pytest.raises(ValueError, match="KW_BOTTLENECK_THRESHOLDS"):
        ncu.Thresholds.from_env()


def test_a_profile_that_finds_no_kernel_says_what_ncu_complained_of(tmp_path):
    """An operator reading "profiled no kernel" needs ncu's own last error (on an H200, 2026-11-27, the confined
    ncu said nothing more, and only a probe found why). A stand-in ncu: a script that prints what ncu prints
    when it cannot start, and no CSV."""
    from worker.engine.toolchain import Toolchain

    tool = tmp_path / "kit" / "bin" / "ncu"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho '==PROF== Connected to process 1'\n"
                    "echo '==ERROR== The application returned an error code (1).'\n")
    tool.chmod(0o755)
    chain = Toolchain("nvcc", "", str(tool), "", None, None, "no GPU", "sm_90")
    work = tmp_path / "work"
    work.mkdir()
    run = ncu.profile(chain, ["/bin/true"], "filtered", None, work, timeout_s=30)
    assert not run.ok and not run.kernels
    assert run.reason == ("ncu profiled no kernel matching the filter "
                          "(ncu said: ==ERROR== The application returned an error code (1).)")
