"""bench/clock_log.py: a device call's clock log (nvidia-smi's CSV, as bench/gpu_run.sh writes it) summed up, its
slowdown episodes found by the evaluator's own rule."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]
_spec = importlib.util.spec_from_file_location("clock_log", REPO / "bench" / "clock_log.py")
clock_log = importlib.util.module_from_spec(_spec)
sys.modules["clock_log"] = clock_log
_spec.loader.exec_module(clock_log)

HEADER = ("timestamp, index, clocks.current.sm [MHz], clocks.max.sm [MHz], clocks_event_reasons.active, "
          "power.draw [W], temperature.gpu\n")


def _log(tmp_path: Path, rows: list[tuple[str, int, str, float]], gpu: int = 0) -> Path:
    """rows: (hh:mm:ss.fff, SM MHz, reasons, watts), all at a 1980 MHz maximum."""
    path = tmp_path / "clocks.csv"
    path.write_text(HEADER + "".join(f"2026/11/29 {t}, {gpu}, {sm}, 1980, {r}, {w}, 35\n" for t, sm, r, w in rows)
                    + "2026/11/29 10:09:00.000, 0, [N/A], 1980, 0x0")  # a cut last line is skipped
    return path


def test_a_power_cap_episode_is_found_with_its_span_clock_power_and_reason(tmp_path, capsys):
    rows = [("10:08:00.000", 345, "0x0000000000000001", 70.0), ("10:08:05.000", 1980, "0x0000000000000000", 500.0),
            ("10:08:10.000", 1695, "0x0000000000000004", 687.0), ("10:08:11.000", 1455, "0x0000000000000004", 712.0),
            ("10:08:18.000", 1650, "0x0000000000000004", 660.0),  # 7 s later: a second episode
            ("10:08:20.000", 1980, "0x0000000000000008", 600.0)]  # a reason at full clock: not slowed
    assert clock_log.main([str(_log(tmp_path, rows))]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("clock log: 6 readings over 20 s, SM clock maximum 1980 MHz; busy readings at 1455 - 1980 MHz; "
                      "slowed in 3 readings, 2 episodes:")
    assert out[1] == "  GPU 0, 10:08:10 - 10:08:11 (1.0 s): SM clock down to 1455 MHz, up to 712 W, software power cap"
    assert out[2].startswith("  GPU 0, 10:08:18 - 10:08:18 (0.0 s): SM clock down to 1650 MHz")


def test_a_log_at_full_clock_says_the_gpu_never_slowed_down(tmp_path, capsys):
    rows = [("10:00:00.000", 1980, "0x0000000000000000", 400.0), ("10:00:01.000", 1980, "0x0000000000000000", 410.0)]
    clock_log.main([str(_log(tmp_path, rows))])
    out = capsys.readouterr().out.strip()
    assert out.endswith("busy readings at 1980 - 1980 MHz; the GPU never slowed itself down")


def test_a_file_that_is_not_a_clock_log_is_refused_by_name(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("name, value\na, 1\n")
    with pytest.raises(SystemExit, match="not a clock log of bench/gpu_run.sh"):
        clock_log.main([str(path)])
