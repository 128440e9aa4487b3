"""The performance numbers behind the charts: GPU peaks, bytes/FLOPs per size, the roofline and speedup
chart data, computed from the demo trajectories (real H100/H200 runs) imported into the database."""

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from apps.catalog.services import tasks_sync
from apps.runs import peaks, roofline, viewer
from apps.runs.trajectory_import import trajectory_import

DEMO = Path(settings.BASE_DIR) / "demo" / "trajectories"


@pytest.fixture
def library(db):
    tasks_sync(settings.TASKS_DIR)


def _import(name: str, owner):
    return trajectory_import(json.loads((DEMO / f"{name}_trajectory.json").read_text()), owner=owner, public=True)


@pytest.mark.parametrize(("reported", "model", "bandwidth"), [
    ("NVIDIA H200", "H200 SXM", 4800),
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 3350),
    ("NVIDIA H100 PCIe", "H100 PCIe", 2000),
    ("NVIDIA H100 NVL", "H100 NVL", 3900),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 2039),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB SXM", 1555),
    ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 1935),
    ("NVIDIA L40S", "L40S", 864),
    ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", 1008),
])
def test_the_reported_gpu_name_finds_its_datasheet_peaks(reported, model, bandwidth):
    found = peaks.for_gpu(reported)
    assert found.model == model and found.bandwidth_gbs == bandwidth and found.source


def test_an_unknown_gpu_has_no_peaks_and_the_roofline_says_so():
    assert peaks.for_gpu("NVIDIA GeForce GTX 1080") is None and peaks.for_gpu("") is None
    data = roofline.roofline_data("NVIDIA GeForce GTX 1080", "fp32", [], "1.0")
    assert data["points"] == [] and "No peak figures for the GPU “NVIDIA GeForce GTX 1080”" in data["missing"]


def test_bf16_tasks_are_measured_against_the_tensor_core_peak():
    h100 = peaks.for_gpu("NVIDIA H100 80GB HBM3")
    assert h100.compute("fp32") == 67e12 and h100.compute("bf16") == 989.5e12
    assert h100.compute_label("bf16") == "BF16 tensor"


def test_matrix_mul_sizes_get_bandwidth_flops_and_their_share_of_the_h200_peak(library, admin_user):
    run = _import("matrix_mul_fp32", admin_user)
    best = run.best_turn
    perf = viewer.performance(run, best)
    first = best.results[0]
    m, n, k = (first["params"][p] for p in ("M", "N", "K"))
    row = perf["perf"][0]
    seconds = first["candidate"]["mean_ms"] / 1e3
    assert row.source == "work model"
    assert row.flops == 2 * m * n * k and row.bytes == (m * k + k * n + m * n) * 4
    assert row.flop_rate == pytest.approx(2 * m * n * k / seconds)
    assert row.flops_pct == pytest.approx(100 * row.flop_rate / 67e12)
    assert row.bandwidth_pct == pytest.approx(100 * row.bytes / seconds / 4.8e12)
    assert 0 < row.flops_pct < 100 and row.intensity == pytest.approx(row.flops / row.bytes)
    chart = perf["roofline"]
    assert chart["gpu"] == "H200 SXM" and chart["missing"] == "" and len(chart["points"]) == len(best.results)
    assert chart["roofs"]["bandwidth"] == 4.8e12 and chart["roofs"]["compute"][0]["flops"] == 67e12


def test_the_baseline_turn_is_measured_with_its_own_timings(library, admin_user):
    run = _import("dot_product_fp32", admin_user)
    baseline = run.turns.get(round_index=0, debug_index=0)
    perf = viewer.performance(run, baseline)["perf"]
    assert len(perf) == len(baseline.results)
    assert perf[0].time_ms == baseline.results[0]["baseline"]["mean_ms"]


def test_without_a_work_model_ncu_dram_bytes_and_flop_counts_are_used():
    metrics = {"Memory Workload Analysis": {"dram__bytes.sum": {"value": 8e6, "unit": "byte"}},
               "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e6,
               "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": {"value": 5e5, "unit": "inst"}}
    assert roofline.from_profile(metrics) == (8e6, 2.5e6)
    assert roofline.from_profile({"Duration": {"value": 1.0}}) == (None, None)


def test_dram_bytes_come_from_the_stored_memory_throughput_of_a_real_profile():
    demo = json.loads((DEMO / "dot_product_fp32_trajectory.json").read_text())
    profile = demo["turns"][0]["evaluation"]["profiles"][0]
    full = profile["full_metrics"]
    rate = full["Memory Workload Analysis"]["Memory Throughput"]["value"]  # byte/s, not the SOL section's %
    duration = full["GPU Speed Of Light Throughput"]["Duration"]["value"]  # ns
    nbytes, flops = roofline.from_profile({**full, **profile["metrics"]})
    assert nbytes == pytest.approx(rate * duration * 1e-9) and flops is None


def test_a_task_without_a_model_but_with_profiles_gets_bandwidth_from_ncu(library, admin_user):
    run = _import("dot_product_fp32", admin_user)
    roofline.WORK.pop("dot_product")
    try:
        perf = viewer.performance(run, run.turns.get(round_index=0, debug_index=0))
    finally:
        roofline.WORK["dot_product"] = ("2 * N", "2 * N")
    rows = perf["perf"]
    assert rows and all(r.source == "Nsight Compute" and r.bandwidth_pct is not None for r in rows)
    assert perf["roofline"]["points"] == [] and "no FLOP counts" in perf["roofline"]["missing"]


def test_a_task_without_a_model_or_counters_gets_a_sentence_instead_of_a_roofline(library, admin_user):
    run = _import("vector_add_make", admin_user)  # a make task: sizes are cases, no bytes/FLOPs model
    turn = run.turns.get(round_index=0, debug_index=0)
    chart = viewer.performance(run, turn)["roofline"]
    assert chart["points"] == [] and chart["missing"].startswith("No bytes/FLOPs model for this task")


def test_speedup_chart_data_has_one_series_per_size_over_the_non_baseline_turns(library, admin_user):
    run = _import("softmax_fp32", admin_user)
    items = viewer.timeline(run)
    data = viewer.chart_data(items, viewer.results_by_turn(run))["speedup"]
    turns = [i for i in items if i.kind != "baseline"]
    assert data["turns"] == [i.label for i in turns] and len(data["sizes"]) == 16
    assert all(len(s["values"]) == len(turns) for s in data["sizes"])
    best = data["best_index"]
    assert turns[best].is_best and all(s["values"][best] > 0 for s in data["sizes"])
    failed = [k for k, i in enumerate(turns) if not i.valid]
    assert failed and all(s["values"][k] is None for s in data["sizes"] for k in failed)
    assert data["failed"] == [not i.valid for i in turns]


def test_the_library_reference_is_drawn_where_it_was_measured(library, admin_user):
    run = _import("vector_add_make", admin_user)
    data = viewer.chart_data(viewer.timeline(run), viewer.results_by_turn(run))["speedup"]
    base = run.turns.get(round_index=0, debug_index=0).results[0]
    assert data["sizes"][0]["reference"] == pytest.approx(base["baseline"]["mean_ms"] / base["reference"]["mean_ms"])


def test_the_run_page_carries_the_speedup_chart_and_the_turn_roofline(library, admin_user, client):
    run = _import("matrix_mul_fp32", admin_user)
    client.force_login(admin_user)
    html = client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'data-chart="speedup"' in html and 'id="chart-speedup"' in html
    assert 'data-chart="roofline"' in html and "Roofline of turn" in html and "% of peak BW" in html
    assert 'data-chart="size-strips"' not in html


def test_a_turn_that_did_not_run_says_so_rather_than_blaming_the_model(library, admin_user):
    run = _import("matrix_mul_fp32", admin_user)
    failed = run.turns.get(round_index=1, debug_index=0)  # a compile error: no timings
    chart = viewer.performance(run, failed)["roofline"]
    assert chart["points"] == [] and chart["missing"].startswith("Turn 1.0 has no timings")
