"""Achieved DRAM bandwidth and FLOP/s per size, as a share of the GPU's peak, and the roofline chart's data.

Bytes and FLOPs of one call come from a work model: the task's own (`details["work"]` =
{"bytes": expr, "flops": expr}, expressions over the size names in element counts for bytes), else the
table below for operators whose compulsory traffic is plain (each input read once, each output written
once), else the Nsight Compute metrics stored with the turn's profile at that size (DRAM bytes and the
executed FP32 instruction counts, an FFMA counting two FLOPs). Nothing is guessed beyond that: a size
without either has no point, and the chart says why.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from apps.runs.peaks import Peaks, for_gpu
from worker.engine.taskspec import eval_complexity

# Minimum DRAM traffic (elements read + written) and arithmetic (FLOPs, one per add, multiply, compare,
# exp or divide) of one call, per operator of the bundled suites.
WORK: dict[str, tuple[str, str]] = {
    "vector_add": ("3 * N", "N"),
    "dot_product": ("2 * N", "2 * N"),
    "matrix_mul": ("M * K + K * N + M * N", "2 * M * N * K"),
    "square_matrix_mul": ("3 * M * M", "2 * M * M * M"),
    "matrix_vector_mul": ("M * N + N + M", "2 * M * N"),
    "matrix_transpose": ("2 * M * N", "0"),
    "matrix_copy": ("2 * M * N", "0"),
    "softmax": ("2 * N * C", "5 * N * C"),  # max, subtract, exp, sum, divide per element
    "RELU": ("2 * N", "N"),
    "scale_bias_leaky_relu": ("2 * batch_size * features + features", "4 * batch_size * features"),
}
ELEMENT_BYTES = {"fp32": 4, "bf16": 2}

_DRAM_BYTES = ("dram__bytes.sum", "dram__bytes_read.sum+dram__bytes_write.sum")
_FLOP_METRICS = (("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 2),
                 ("sm__sass_thread_inst_executed_op_fadd_pred_on.sum", 1),
                 ("sm__sass_thread_inst_executed_op_fmul_pred_on.sum", 1))


@dataclass(frozen=True)
class SizePerf:
    size: str
    time_ms: float
    bytes: float | None
    flops: float | None
    source: str  # "work model" | "Nsight Compute"
    bandwidth: float | None = None  # bytes/s
    flop_rate: float | None = None  # FLOP/s
    bandwidth_pct: float | None = None  # of the GPU's peak
    flops_pct: float | None = None

    @property
    def megabytes(self) -> float | None:
        return self.bytes / 1e6 if self.bytes is not None else None

    @property
    def gbs(self) -> float | None:
        return self.bandwidth / 1e9 if self.bandwidth is not None else None

    @property
    def gflops(self) -> float | None:
        return self.flop_rate / 1e9 if self.flop_rate is not None else None

    @property
    def intensity(self) -> float | None:
        """FLOP per byte of DRAM traffic."""
        return self.flops / self.bytes if self.flops and self.bytes else None


def work_model(task) -> tuple[str, str] | None:
    own = ((task.details or {}).get("work") or {}) if hasattr(task, "details") else {}
    if own.get("bytes") and own.get("flops") is not None:
        return str(own["bytes"]), str(own["flops"])
    return WORK.get(task.operator)


def _metric(profile_metrics: dict, name: str) -> float | None:
    """A raw ncu metric from a profile's filtered or full metrics (full metrics are grouped by section)."""
    for group in (profile_metrics, *[v for v in profile_metrics.values() if isinstance(v, dict)]):
        value = group.get(name) if isinstance(group, dict) else None
        if isinstance(value, dict):
            value = value.get("value")
        if isinstance(value, int | float):
            return float(value)
    return None


def _section_value(metrics: dict, section: str, name: str, unit: str) -> float | None:
    value = ((metrics.get(section) or {}).get(name)) if isinstance(metrics.get(section), dict) else None
    if isinstance(value, dict) and value.get("unit") == unit and isinstance(value.get("value"), int | float):
        return float(value["value"])
    return None


def from_profile(metrics: dict) -> tuple[float | None, float | None]:
    """(DRAM bytes, FP32 FLOPs) of one kernel launch from stored ncu metrics, None where not collected.

    Bytes: the raw `dram__bytes.sum`, else the DRAM throughput of the Memory Workload Analysis section
    (byte/s) times the kernel's duration. FLOPs: the executed FFMA (two each), FADD and FMUL counts."""
    dram = next((v for v in (_metric(metrics, n) for n in _DRAM_BYTES) if v is not None), None)
    if dram is None:
        rate = _section_value(metrics, "Memory Workload Analysis", "Memory Throughput", "byte/s")
        duration = _section_value(metrics, "GPU Speed Of Light Throughput", "Duration", "ns")
        dram = rate * duration * 1e-9 if rate is not None and duration else None
    counts = [(_metric(metrics, n), w) for n, w in _FLOP_METRICS]
    flops = sum(v * w for v, w in counts if v is not None) if any(v is not None for v, _ in counts) else None
    return dram, flops


def _kernels_total(kernels: list[dict]) -> tuple[float | None, float | None]:
    """Bytes and FLOPs of every kernel a size launched, summed (None where no kernel had the figure)."""
    pairs = [from_profile(m) for m in kernels]
    total = [sum(v for v in column if v is not None) if any(v is not None for v in column) else None
             for column in zip(*pairs, strict=True)] if pairs else [None, None]
    return total[0], total[1]


def size_perf(task, precision: str, results: list[dict], profiles: dict[int, list[dict]], peaks: Peaks | None,
              labels: dict[int, str], baseline: bool = False) -> list[SizePerf]:
    """Per size of one turn: bytes and FLOPs, achieved rates, and their share of the GPU's peaks.

    profiles: ncu metrics (filtered and full, one dict per kernel) per size index; labels: the size labels."""
    model = work_model(task)
    out = []
    for n, r in enumerate(results or []):
        timing = (r.get("baseline") if baseline else r.get("candidate")) or {}
        ms = timing.get("mean_ms")
        if not ms or ms <= 0:
            continue
        index = r.get("index", n)
        label = labels.get(index, str(index))
        nbytes = flops = None
        source = ""
        if model is not None:
            try:
                nbytes = eval_complexity(model[0], r.get("params") or {}) * ELEMENT_BYTES.get(precision, 4)
                flops = eval_complexity(model[1], r.get("params") or {})
                source = "work model"
            except (ValueError, ZeroDivisionError, SyntaxError):
                nbytes = flops = None
        if nbytes is None and index in profiles:
            nbytes, flops = _kernels_total(profiles[index])
            source = "Nsight Compute" if nbytes is not None or flops is not None else ""
        if not source:
            continue
        seconds = ms / 1e3
        bandwidth = nbytes / seconds if nbytes else None
        flop_rate = flops / seconds if flops else None
        out.append(SizePerf(
            label, ms, nbytes, flops, source, bandwidth, flop_rate,
            100 * bandwidth / peaks.bandwidth if bandwidth and peaks else None,
            100 * flop_rate / peaks.compute(precision) if flop_rate and peaks else None))
    return out


def roofline_data(gpu_name: str, precision: str, perf: list[SizePerf], turn_label: str,
                  timed: bool = True) -> dict[str, Any]:
    """JSON for the `roofline` chart kind (frontend/charts.js); `missing` says in words what is absent.

    timed: whether the turn has any timing at all (a failed turn has none, whatever the task's model)."""
    peaks = for_gpu(gpu_name)
    points = [{"size": p.size, "intensity": p.intensity, "flops": p.flop_rate, "bandwidth": p.bandwidth,
               "bandwidth_pct": p.bandwidth_pct, "flops_pct": p.flops_pct} for p in perf if p.intensity]
    missing = ""
    if not timed:
        missing = (f"Turn {turn_label} has no timings (it did not compile, failed its checks or did not run): "
                   "no roofline.")
    elif peaks is None:
        missing = (f"No peak figures for the GPU “{gpu_name or 'unknown'}” (apps/runs/peaks.py lists H100, H200, "
                   f"A100, L40S and RTX 4090): no roofline.")
    elif not perf:
        missing = ("No bytes/FLOPs model for this task and no Nsight Compute byte and FLOP counts for this turn: "
                   "no roofline.")
    elif not points and any(p.source == "work model" for p in perf):
        missing = "This task moves data without arithmetic (no FLOPs): only bandwidth is shown, in the table."
    elif not points:
        missing = ("The profile has DRAM bytes but no FLOP counts (the sm__sass_thread_inst_executed_op_* metrics "
                   "were not collected): only bandwidth is shown, in the table.")
    roofs = {}
    if peaks is not None:
        roofs = {"bandwidth": peaks.bandwidth, "memory": f"{peaks.memory} {peaks.bandwidth_gbs:g} GB/s",
                 "compute": [{"label": f"FP32 {peaks.fp32_tflops:g} TFLOP/s", "flops": peaks.fp32_tflops * 1e12}]}
        if precision == "bf16" and peaks.bf16_tensor_tflops:
            roofs["compute"].append({"label": f"BF16 tensor {peaks.bf16_tensor_tflops:g} TFLOP/s",
                                     "flops": peaks.bf16_tensor_tflops * 1e12})
    return {"gpu": peaks.model if peaks else (gpu_name or ""), "turn": turn_label, "roofs": roofs,
            "points": points if peaks else [], "missing": missing,
            "source": sorted({p.source for p in perf})}


def perf_rows(perf: list[SizePerf]) -> list[dict[str, Any]]:
    return [asdict(p) | {"intensity": p.intensity} for p in perf]
