"""What the GPU's clock did over a whole device call: the log `bench/gpu_run.sh` writes (clocks.csv, nvidia-smi every
250 ms), summed up in one line and a list of slowdown episodes (docs/benchmarks.md quotes them beside each table).

    python bench/clock_log.py clocks.csv

A reading is slowed by the evaluator's own rule (worker/engine/clock.py): a slowdown the driver names (power cap,
thermal, hardware) with the SM clock under 97 % of its maximum. Slowed readings less than 2 s apart make one
episode; each prints its start, end, lowest SM clock, highest power draw and reasons. Without slowed readings
the line says the clock held, and at which SM clocks the busy readings sat.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker.engine.clock import SLOWDOWNS, ClockReading  # noqa: E402

EPISODE_GAP_S = 2.0  # slowed readings closer than this belong to one episode


@dataclass(frozen=True)
class Row:
    at: datetime
    reading: ClockReading
    watts: float | None
    gpu: str  # nvidia-smi's index: the log holds every GPU of the host


def _column(header: list[str], *prefixes: str) -> int | None:
    for i, name in enumerate(header):
        if any(name.strip().startswith(p) for p in prefixes):
            return i
    return None


def read_log(path: Path) -> list[Row]:
    """The log's readings (`--format=csv,nounits` with its header); lines that do not parse are skipped (nvidia-smi
    prints "[N/A]" for a field it cannot read at that moment, and a killed poll may cut its last line)."""
    with path.open(newline="") as fh:
        lines = list(csv.reader(fh))
    if not lines:
        return []
    header = lines[0]
    cols = {"at": _column(header, "timestamp"), "sm": _column(header, "clocks.current.sm", "clocks.sm"),
            "max": _column(header, "clocks.max.sm"),
            "reasons": _column(header, "clocks_event_reasons.active", "clocks_throttle_reasons.active"),
            "watts": _column(header, "power.draw"), "gpu": _column(header, "index")}
    if None in (cols["at"], cols["sm"], cols["max"], cols["reasons"]):
        raise SystemExit(f"{path}: not a clock log of bench/gpu_run.sh (header: {', '.join(header)})")
    rows = []
    for line in lines[1:]:
        try:
            at = datetime.strptime(line[cols["at"]].strip(), "%Y/%m/%d %H:%M:%S.%f")
            reading = ClockReading(int(line[cols["sm"]]), int(line[cols["max"]]), int(line[cols["reasons"]], 16))
            watts = float(line[cols["watts"]]) if cols["watts"] is not None else None
        except (IndexError, ValueError):
            continue
        rows.append(Row(at, reading, watts, line[cols["gpu"]].strip() if cols["gpu"] is not None else "0"))
    return rows


def episodes(rows: list[Row]) -> list[list[Row]]:
    """The slowed readings, grouped per GPU: a gap of EPISODE_GAP_S or more starts a new episode."""
    out: list[list[Row]] = []
    for gpu in sorted({r.gpu for r in rows}):
        mine: list[list[Row]] = []
        for row in (r for r in rows if r.reading.slowed and r.gpu == gpu):
            if mine and (row.at - mine[-1][-1].at).total_seconds() < EPISODE_GAP_S:
                mine[-1].append(row)
            else:
                mine.append([row])
        out += mine
    return sorted(out, key=lambda e: e[0].at)


def describe(rows: list[Row]) -> list[str]:
    """The summary line, then one line per episode."""
    if not rows:
        return ["clock log: no readings"]
    span = (rows[-1].at - rows[0].at).total_seconds()
    top = max(r.reading.max_mhz for r in rows)
    busy = sorted({r.reading.sm_mhz for r in rows if not r.reading.reasons & 0x01})  # not idle
    found = episodes(rows)
    head = (f"clock log: {len(rows)} readings over {span:.0f} s, SM clock maximum {top} MHz; "
            f"busy readings at {busy[0]} - {busy[-1]} MHz" if busy else
            f"clock log: {len(rows)} readings over {span:.0f} s, SM clock maximum {top} MHz; no busy reading")
    if not found:
        return [head + "; the GPU never slowed itself down"]
    slowed = sum(len(e) for e in found)
    lines = [head + f"; slowed in {slowed} readings, {len(found)} episodes:"]
    for e in found:
        names = [name for bit, name in SLOWDOWNS.items() if any(r.reading.reasons & bit for r in e)]
        watts = [r.watts for r in e if r.watts is not None]
        lines.append(f"  GPU {e[0].gpu}, {e[0].at:%H:%M:%S} - {e[-1].at:%H:%M:%S} "
                     f"({(e[-1].at - e[0].at).total_seconds():.1f} s): "
                     f"SM clock down to {min(r.reading.sm_mhz for r in e)} MHz"
                     f"{f', up to {max(watts):.0f} W' if watts else ''}, {', '.join(names)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path, help="clocks.csv of a bench/gpu_run.sh call")
    args = parser.parse_args(argv)
    print("\n".join(describe(read_log(args.log))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
