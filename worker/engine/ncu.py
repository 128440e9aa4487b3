"""Nsight Compute: run it, parse its CSV, classify the bottleneck, filter the metrics.

Classification and filtering follow the CUDAMaster paper (Table 2, Table 6,
Appendix A): three throughputs from the Speed Of Light section decide the
class, and only that class's metrics go to the Planner. The full metric set is
kept for the viewer. `otsu_threshold` recomputes the class boundaries from a
library of baseline profiles.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from worker.engine import confine, sandbox
from worker.engine.harness import HARNESS_LIMITS
from worker.engine.results import Bottleneck, Profile
from worker.engine.toolchain import Toolchain

SOL = "GPU Speed Of Light Throughput"
CWA = "Compute Workload Analysis"
MWA = "Memory Workload Analysis"
# Paper Table 6: the six sections of a `full` profile (ncu section identifiers).
FULL_SECTIONS = (
    "SpeedOfLight",
    "ComputeWorkloadAnalysis",
    "MemoryWorkloadAnalysis",
    "Occupancy",
    "SchedulerStats",
    "WarpStateStats",
)
# `filtered` needs Speed Of Light to classify plus the sections holding any class's metrics; the class
# is only known after the run, so the union is collected in one pass instead of profiling twice.
FILTERED_SECTIONS = ("SpeedOfLight", "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis")
PROFILE_MODES = ("filtered", "full", "none")

# The classification axes (paper Appendix A.2), by (section, metric) in the details page ...
COMPUTE_TH = (SOL, "Compute (SM) Throughput")
DRAM_TH = (SOL, "DRAM Throughput")
MEMORY_TH = (SOL, "Memory Throughput")
DURATION = (SOL, "Duration")
# ... and by metric name in the raw page.
RAW_AXES = {
    COMPUTE_TH: "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    DRAM_TH: "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    MEMORY_TH: "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    DURATION: "gpu__time_duration.sum",
}
# Paper Table 2: the metrics kept for each class. Duration is added to every class: it is the
# measure every optimization is judged by (Appendix A.2).
CLASS_METRICS: dict[Bottleneck, tuple[tuple[str, str], ...]] = {
    Bottleneck.COMPUTE: (
        COMPUTE_TH,
        (CWA, "Issue Slots Busy"),
        (CWA, "Executed Ipc Active"),
        (CWA, "SM Busy"),
    ),
    Bottleneck.MEMORY_LATENCY: (
        (MWA, "L2 Hit Rate"),
        (MWA, "L1/TEX Hit Rate"),
        (CWA, "Executed Ipc Elapsed"),
        (MWA, "Mem Busy"),
    ),
    Bottleneck.MEMORY_BANDWIDTH: (DRAM_TH, MEMORY_TH, (MWA, "Max Bandwidth"), (MWA, "Mem Pipes Busy")),
}
_UNIT_SCALE = {
    "nsecond": ("ns", 1.0),
    "usecond": ("ns", 1e3),
    "msecond": ("ns", 1e6),
    "second": ("ns", 1e9),
    "Kbyte": ("byte", 1e3),
    "Mbyte": ("byte", 1e6),
    "Gbyte": ("byte", 1e9),
    "Tbyte": ("byte", 1e12),
    "Kbyte/s": ("byte/s", 1e3),
    "Mbyte/s": ("byte/s", 1e6),
    "Gbyte/s": ("byte/s", 1e9),
    "Tbyte/s": ("byte/s", 1e12),
    "Khz": ("hz", 1e3),
    "Mhz": ("hz", 1e6),
    "Ghz": ("hz", 1e9),
    "Kcycle": ("cycle", 1e3),
    "Mcycle": ("cycle", 1e6),
}


@dataclass(frozen=True)
class Thresholds:
    """Class boundaries in percent (paper: all three near 30% by Otsu's method)."""

    compute: float = 30.0
    dram: float = 30.0
    memory: float = 30.0

    @classmethod
    def from_env(cls) -> Thresholds:
        """KW_BOTTLENECK_THRESHOLDS="compute,dram,memory" (e.g. the H100 census values of
        docs/bottleneck-census.md); the paper's 30/30/30 when unset."""
        raw = os.environ.get("KW_BOTTLENECK_THRESHOLDS", "").strip()
        if not raw:
            return cls()
        try:
            compute, dram, memory = (float(x) for x in raw.split(","))
        except ValueError:
            raise ValueError(f"KW_BOTTLENECK_THRESHOLDS must be three percentages 'compute,dram,memory', "
                             f"got {raw!r}") from None
        if not all(0 < v < 100 for v in (compute, dram, memory)):
            raise ValueError(f"KW_BOTTLENECK_THRESHOLDS values must lie strictly between 0 and 100, got {raw!r}")
        return cls(compute, dram, memory)


@dataclass(frozen=True)
class KernelMetrics:
    """One profiled kernel launch: its identity and section -> metric -> {value, unit}."""

    launch_id: int
    kernel: str  # base function name
    signature: str  # as ncu prints it
    block: str
    grid: str
    metrics: dict[str, dict[str, dict[str, Any]]]

    def value(self, key: tuple[str, str]) -> float | None:
        entry = self.metrics.get(key[0], {}).get(key[1])
        value = entry.get("value") if entry else None
        return value if isinstance(value, float) else None


# ---------------------------------------------------------------- parsing


def parse_number(text: str) -> float | None:
    """'2,617,598,612.92' -> 2617598612.92; 'no data', 'n/a', '' -> None."""
    cleaned = text.strip().replace(",", "").replace("\u202f", "")
    try:
        return float(cleaned)
    except ValueError:
        return None


def _normalize(value: float | None, unit: str) -> tuple[float | None, str]:
    if value is not None and unit in _UNIT_SCALE:
        base, factor = _UNIT_SCALE[unit]
        return value * factor, base
    return value, unit


def kernel_base_name(signature: str) -> str:
    """'void foo<256>(const float *, int)' -> 'foo'; 'vadd(const float *)' -> 'vadd'."""
    head = signature.split("(", 1)[0]
    head = re.sub(r"<.*>", "", head).strip()
    return head.split()[-1].split("::")[-1] if head else signature


def _csv_rows(text: str) -> list[list[str]]:
    """Rows from the first '"ID",' header on; lines that are not CSV records (==PROF== notes,
    the program's own output) are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    kept = [lines[start]] + [ln for ln in lines[start + 1 :] if ln.startswith('"')]
    return list(csv.reader(io.StringIO("\n".join(kept))))


def parse_details_csv(text: str) -> list[KernelMetrics]:
    """Parse `ncu --csv --page details` output: one KernelMetrics per profiled launch (by ID)."""
    rows = _csv_rows(text)
    if not rows:
        return []
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    need = ("ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value")
    if any(n not in col for n in need):
        raise ValueError(f"not an ncu details CSV: header lacks {[n for n in need if n not in col]}")
    launches: dict[int, KernelMetrics] = {}
    for row in rows[1:]:
        if len(row) <= col["Metric Value"] or not row[col["ID"]].strip().isdigit():
            continue
        metric = row[col["Metric Name"]].strip()
        if not metric:
            continue  # a rule/advice row
        launch = int(row[col["ID"]])
        if launch not in launches:
            sig = row[col["Kernel Name"]]
            launches[launch] = KernelMetrics(
                launch,
                kernel_base_name(sig),
                sig,
                row[col["Block Size"]] if "Block Size" in col else "",
                row[col["Grid Size"]] if "Grid Size" in col else "",
                {},
            )
        raw = row[col["Metric Value"]]
        value, unit = _normalize(parse_number(raw), row[col["Metric Unit"]].strip())
        section = launches[launch].metrics.setdefault(row[col["Section Name"]].strip(), {})
        section[metric] = {"value": value if value is not None else raw.strip(), "unit": unit}
    return [launches[k] for k in sorted(launches)]


def parse_raw_csv(text: str) -> list[KernelMetrics]:
    """Parse `ncu --csv --page raw` output: header, a units row, then one row per launch.

    Metrics land in a single pseudo-section "raw"; `details_view` maps the classification axes.
    """
    rows = _csv_rows(text)
    if len(rows) < 2:
        return []
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    units = rows[1] if not rows[1][col["ID"]].strip() else [""] * len(header)
    out = []
    for row in rows[1:]:
        if not row[col["ID"]].strip().isdigit():
            continue
        metrics = {}
        for i, name in enumerate(header):
            if "__" not in name or i >= len(row):
                continue
            value, unit = _normalize(parse_number(row[i]), units[i] if i < len(units) else "")
            metrics[name] = {"value": value if value is not None else row[i], "unit": unit}
        sig = row[col["Kernel Name"]]
        out.append(
            KernelMetrics(
                int(row[col["ID"]]),
                kernel_base_name(sig),
                sig,
                row[col.get("Block Size", 0)],
                row[col.get("Grid Size", 0)],
                {"raw": metrics},
            )
        )
    return out


def details_view(raw: KernelMetrics) -> KernelMetrics:
    """A raw-page launch with its classification axes also filed under their details-page names."""
    metrics = {k: dict(v) for k, v in raw.metrics.items()}
    for (section, name), raw_name in RAW_AXES.items():
        if raw_name in raw.metrics.get("raw", {}):
            metrics.setdefault(section, {})[name] = raw.metrics["raw"][raw_name]
    return KernelMetrics(raw.launch_id, raw.kernel, raw.signature, raw.block, raw.grid, metrics)


# ---------------------------------------------------------------- classification and filtering


def classify_values(compute: float, dram: float, memory: float, t: Thresholds = Thresholds()) -> Bottleneck:
    """Paper Table 2. Compute bound: compute > t.compute. Latency bound: all three strictly below their
    thresholds. Everything else (including a value exactly at a memory threshold) is bandwidth bound."""
    if compute > t.compute:
        return Bottleneck.COMPUTE
    if dram < t.dram and memory < t.memory:
        return Bottleneck.MEMORY_LATENCY
    return Bottleneck.MEMORY_BANDWIDTH


def classify(kernel: KernelMetrics, t: Thresholds = Thresholds()) -> Bottleneck:
    values = [kernel.value(k) for k in (COMPUTE_TH, DRAM_TH, MEMORY_TH)]
    if any(v is None for v in values):
        return Bottleneck.UNKNOWN
    return classify_values(*values, t)  # type: ignore[arg-type]


def filter_metrics(kernel: KernelMetrics, bottleneck: Bottleneck) -> dict[str, dict[str, Any]]:
    """The class's metrics (paper Table 2) plus Duration, keyed by metric name, for the Planner."""
    keys = (DURATION, *CLASS_METRICS.get(bottleneck, (COMPUTE_TH, DRAM_TH, MEMORY_TH)))
    out = {}
    for section, name in keys:
        entry = kernel.metrics.get(section, {}).get(name)
        if entry is not None:
            out[name] = dict(entry)
    return out


def to_profile(
    kernel: KernelMetrics,
    size_index: int,
    params: dict[str, float],
    mode: str,
    thresholds: Thresholds = Thresholds(),
    tool_version: str = "",
    gpu: str = "",
) -> Profile:
    bottleneck = classify(kernel, thresholds)
    return Profile(
        size_index=size_index,
        params=dict(params),
        kernel=kernel.kernel,
        bottleneck=bottleneck,
        metrics=filter_metrics(kernel, bottleneck),
        full_metrics=kernel.metrics,
        duration_ns=kernel.value(DURATION),
        mode=mode,
        tool_version=tool_version,
        gpu=gpu,
    )


def dominant(profiles: list[Profile] | tuple[Profile, ...]) -> Profile | None:
    """The longest-running kernel: the one the paper classifies a task by."""
    timed = [p for p in profiles if p.duration_ns is not None]
    return max(timed, key=lambda p: p.duration_ns or 0.0) if timed else (profiles[0] if profiles else None)


# ---------------------------------------------------------------- Otsu's method (paper Appendix A)


def otsu_threshold(values: list[float] | np.ndarray) -> float:
    """The split maximizing between-class variance w0*w1*(mu0-mu1)^2, exact over the sorted values.

    Returns the midpoint between the last value of the low class and the first of the high class.
    """
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0:
        raise ValueError("Otsu's method needs at least one value")
    if x[0] == x[-1]:
        return float(x[0])
    n = x.size
    k = np.arange(1, n)  # size of the low class
    csum = np.cumsum(x)
    mu0 = csum[:-1] / k
    mu1 = (csum[-1] - csum[:-1]) / (n - k)
    between = (k / n) * (1 - k / n) * (mu0 - mu1) ** 2
    between[x[1:] == x[:-1]] = -1.0  # never split inside a run of equal values
    i = int(np.argmax(between))
    return float((x[i] + x[i + 1]) / 2)


@dataclass(frozen=True)
class OtsuResult:
    thresholds: Thresholds
    distribution: dict[str, int]  # class -> number of kernels under the new thresholds
    samples: int


def otsu_thresholds(samples: list[tuple[float, float, float]]) -> OtsuResult:
    """Thresholds for (compute, dram, memory) throughput triples, and the class distribution they give."""
    if not samples:
        raise ValueError("no profiles to calibrate on")
    arr = np.asarray(samples, dtype=float)
    t = Thresholds(otsu_threshold(arr[:, 0]), otsu_threshold(arr[:, 1]), otsu_threshold(arr[:, 2]))
    counts = Counter(str(classify_values(c, d, m, t)) for c, d, m in arr)
    distribution = {str(b): counts.get(str(b), 0) for b in CLASS_METRICS}
    return OtsuResult(t, distribution, len(samples))


# ---------------------------------------------------------------- running ncu


@dataclass(frozen=True)
class NcuRun:
    kernels: tuple[KernelMetrics, ...]
    command: str
    log: str  # ncu's and the program's output, capped
    ok: bool
    reason: str = ""


def sections_for(mode: str) -> tuple[str, ...]:
    if mode == "full":
        return FULL_SECTIONS
    if mode == "filtered":
        return FILTERED_SECTIONS
    raise ValueError(f"profile mode {mode!r} runs no profiler (one of {PROFILE_MODES})")


def ncu_argv(ncu: str, mode: str, kernel_regex: str | None, from_start: bool) -> list[str]:
    argv = [ncu, "--csv", "--page", "details", "--print-units", "base"]
    for section in sections_for(mode):
        argv += ["--section", section]
    if kernel_regex:
        argv += ["--kernel-name-base", "function", "--kernel-name", f"regex:{kernel_regex}"]
    if not from_start:
        argv += ["--profile-from-start", "off"]
    return argv


def last_launch_per_kernel(kernels: list[KernelMetrics]) -> list[KernelMetrics]:
    """Keep the last launch of each kernel name: the profiled call follows the warm-up call."""
    latest: dict[str, KernelMetrics] = {}
    for k in kernels:
        latest[k.kernel] = k
    return sorted(latest.values(), key=lambda k: k.launch_id)


def profile(
    toolchain: Toolchain,
    program: list[str],
    mode: str,
    kernel_regex: str | None,
    work_dir: Path,
    timeout_s: float = 600.0,
    read: tuple[str, ...] = (),
) -> NcuRun:
    """Run ncu on `program` (the harness in profile mode, one size) and parse the launches; `read`: files it may
    read besides the run policy's (the candidate's shared object).

    The harness brackets the measured call with cudaProfilerStart/Stop, so ncu starts with
    profiling off; if that yields nothing (an older harness), it profiles from the start and
    keeps the last launch of each kernel.
    """
    if not toolchain.ncu:
        return NcuRun((), "", "", False, "ncu (Nsight Compute) not found")
    log = ""
    for from_start in (False, True):
        argv = ncu_argv(toolchain.ncu, mode, kernel_regex, from_start) + list(program)
        # The profiled program is the candidate: it gets the harness's limits, network namespace included.
        policy = confine.candidate_run(program[0], work_dir, tool=toolchain.ncu, read=read)
        res = sandbox.run(argv, work_dir, timeout_s, name="ncu", output_cap=4 * 1024 * 1024, limits=HARNESS_LIMITS,
                          policy=policy)
        log = res.output
        command = " ".join(argv)
        if res.timed_out:
            return NcuRun((), command, log, False, f"ncu timed out after {timeout_s:.0f} s")
        try:
            kernels = parse_details_csv(Path(res.stdout_path).read_text(encoding="utf-8", errors="replace"))
        except ValueError as exc:
            return NcuRun((), command, log, False, str(exc))
        if kernels:
            kernels = kernels if not from_start else last_launch_per_kernel(kernels)
            return NcuRun(tuple(kernels), command, log, True)
        if res.returncode not in (0, None) and "ERR_NVGPUCTRPERM" in log:
            return NcuRun(
                (),
                command,
                log,
                False,
                "no permission for GPU performance counters "
                "(ERR_NVGPUCTRPERM): enable them for non-admin users or run as admin",
            )
    complaint = [ln.strip() for ln in log.splitlines() if ln.lstrip().startswith(("==ERROR==", "==WARNING=="))]
    detail = f" (ncu said: {complaint[-1][:300]})" if complaint else ""
    return NcuRun((), command, log, False, f"ncu profiled no kernel matching the filter{detail}")
