"""What the GPU's clock did while a timing process ran (docs/evaluation.md, "The GPU's clock").

A GPU that slows itself down mid-measurement (its software power cap, a thermal or hardware slowdown) makes
every call it times longer: one such episode of a few seconds moved a 16.9 ms call by 19 % on an H200
(docs/benchmarks.md, "Spaced batches"). The timer cannot see it, and the candidate's process must not be asked,
so the parent polls `nvidia-smi` beside the timing process, from outside it, as nvbench does with NVML. A phase
during which the driver reported a slowdown with the SM clock below 97 % of its maximum is timed again once;
if the second run was slowed too, the evaluation says so (EvalContext.timed).

The engine stays free of Django; nvidia-smi is already what finds the GPU (worker.engine.gpu).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from functools import lru_cache
from types import TracebackType

# nvmlClocksEventReasons bits that mean "slower than asked for" (idle, application clocks, sync boost and
# display clocks do not).
POWER_CAP = "software power cap"
SLOWDOWNS = {
    0x04: POWER_CAP,
    0x08: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}
SLOWDOWN_MASK = sum(SLOWDOWNS)
# Under this fraction of the GPU's maximum SM clock a slowdown counts: the driver may raise a reason for a
# moment at a clock change without slowing anything down (NVML's documentation says so of hardware slowdown).
SLOW_FRACTION = 0.97
INTERVAL_MS = 100
QUERIES = ("clocks.sm,clocks.max.sm,clocks_event_reasons.active",
           "clocks.sm,clocks.max.sm,clocks_throttle_reasons.active")  # drivers before R535


@dataclass(frozen=True)
class ClockReading:
    sm_mhz: int
    max_mhz: int
    reasons: int  # the active clock-event bitmask

    @property
    def slowed(self) -> bool:
        return bool(self.reasons & SLOWDOWN_MASK) and self.sm_mhz < SLOW_FRACTION * self.max_mhz


@dataclass(frozen=True)
class ClockReport:
    """One timing phase's readings, every INTERVAL_MS."""

    readings: int
    slowed: int  # readings with a slowdown under SLOW_FRACTION of the maximum
    sm_min_mhz: int
    sm_max_mhz: int
    max_mhz: int
    reasons: tuple[str, ...]  # the slowdowns seen in slowed readings
    slowed_min_mhz: int = 0  # the lowest SM clock of a slowed reading (an idle reading's clock is no slowdown)

    @property
    def throttled(self) -> bool:
        return self.slowed > 0

    @property
    def power_capped(self) -> bool:
        """The power cap was among the slowdowns (a call may reach it by itself: EvalContext.timed)."""
        return POWER_CAP in self.reasons

    def sentence(self) -> str:
        seconds = self.slowed * INTERVAL_MS / 1000
        return (f"the GPU slowed itself down ({', '.join(self.reasons)}) for about {seconds:.1f} s of the "
                f"{self.readings * INTERVAL_MS / 1000:.1f} s timed, its SM clock down to {self.slowed_min_mhz} MHz "
                f"of {self.max_mhz}")

    def to_dict(self) -> dict[str, object]:
        return {"readings": self.readings, "slowed": self.slowed, "sm_min_mhz": self.sm_min_mhz,
                "sm_max_mhz": self.sm_max_mhz, "max_mhz": self.max_mhz, "reasons": list(self.reasons),
                "slowed_min_mhz": self.slowed_min_mhz}


def parse_line(line: str) -> ClockReading | None:
    """One line of `--format=csv,noheader,nounits` ("1980, 1980, 0x0000000000000004"), or None (a
    "[N/A]" field or a line that is not one)."""
    fields = [f.strip() for f in line.split(",")]
    if len(fields) != 3:
        return None
    try:
        return ClockReading(int(fields[0]), int(fields[1]), int(fields[2], 16))
    except ValueError:
        return None


def summarize(readings: list[ClockReading]) -> ClockReport | None:
    """The phase's report, or None without a reading (a phase shorter than nvidia-smi's first poll)."""
    if not readings:
        return None
    slowed = [r for r in readings if r.slowed]
    reasons = tuple(name for bit, name in SLOWDOWNS.items() if any(r.reasons & bit for r in slowed))
    return ClockReport(
        readings=len(readings),
        slowed=len(slowed),
        sm_min_mhz=min(r.sm_mhz for r in readings),
        sm_max_mhz=max(r.sm_mhz for r in readings),
        max_mhz=max(r.max_mhz for r in readings),
        reasons=reasons,
        slowed_min_mhz=min((r.sm_mhz for r in slowed), default=0),
    )


class ClockWatch:
    """`with ClockWatch(gpu_index) as watch: ...`, then `watch.report`: nvidia-smi polling one GPU every
    INTERVAL_MS for as long as the block runs. Without nvidia-smi, or a GPU it can read, or with
    KW_CLOCK_WATCH=off (to measure what the poll itself costs), the report is None and nothing else changes: the
    watch never fails the measurement it watches."""

    def __init__(self, gpu: int | str | None, smi: str | None = None):
        self.gpu = gpu
        self.smi = smi or shutil.which("nvidia-smi")
        self.report: ClockReport | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._readings: list[ClockReading] = []
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ClockWatch:
        if self.gpu is None or self.smi is None or os.environ.get("KW_CLOCK_WATCH") == "off":
            return self
        query = _query(self.smi, str(self.gpu))
        if query is None:
            return self
        try:
            self._proc = subprocess.Popen(
                [self.smi, "-i", str(self.gpu), f"--query-gpu={query}", "--format=csv,noheader,nounits",
                 "-lms", str(INTERVAL_MS)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return self
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.report = summarize(self._readings)

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            reading = parse_line(line)
            if reading is not None:
                self._readings.append(reading)


@lru_cache(maxsize=8)
def _query(smi: str, gpu: str) -> str | None:
    """The first query this driver's nvidia-smi answers (the reasons' field was renamed in R535), asked once."""
    for query in QUERIES:
        try:
            proc = subprocess.run([smi, "-i", gpu, f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                                  capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        lines = proc.stdout.strip().splitlines()
        if proc.returncode == 0 and lines and parse_line(lines[0]) is not None:
            return query
    return None
