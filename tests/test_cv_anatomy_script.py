"""bench/cv_anatomy.py without a GPU: a repeatability JSON whose samples were made to show each kind of CV."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).parents[1]
_spec = importlib.util.spec_from_file_location("cv_anatomy", REPO / "bench" / "cv_anatomy.py")
cv_anatomy = importlib.util.module_from_spec(_spec)
sys.modules["cv_anatomy"] = cv_anatomy
_spec.loader.exec_module(cv_anatomy)

RNG = np.random.default_rng(7)


def timing(samples) -> dict:
    samples = [float(s) for s in samples]
    return {"mean_ms": float(np.mean(samples)), "samples_ms": samples}


def steady(ms: float, n: int = 50) -> np.ndarray:
    return ms * (1 + RNG.normal(0, 0.002, n))


def test_each_size_over_the_goal_is_sorted_by_what_its_samples_show(tmp_path, capsys):
    slow = steady(0.1)
    slow[[7, 31]] = 0.2  # two samples twice as long: the rest lie within 0.2 %
    drift = 0.1 * np.linspace(1.0, 1.08, 50) * (1 + RNG.normal(0, 0.001, 50))
    spread = 0.1 * (1 + RNG.normal(0, 0.05, 50))
    short = 0.005 * (1 + RNG.normal(0, 0.2, 50))  # 5 us: below --min-us, not counted however wide
    after = {"0": timing(slow), "1": timing(drift), "2": timing(spread), "3": timing(short),
             "4": timing(steady(0.1)), "floor": 0.01}
    reference = {k: timing(steady(v["mean_ms"])) for k, v in after.items() if k != "floor"} | {"floor": 0.01}
    paired = {"candidate": {"0": timing(steady(0.05))}, "baseline": {"0": timing(spread[:40])}}
    saved = [
        {"task": "vector_add", "precision": "fp32",
         "runs": {"protocol": "queued", "reference": reference, "after-1": after, "after-2": after}},
        {"task": "rms_norm", "precision": "fp32",  # a pair: the baseline's side is the wide one
         "runs": {"protocol": "queued-interleaved", "reference": {"0": timing(steady(0.05)), "floor": 0.01},
                  "after-1": paired, "after-2": paired}},
    ]
    path = tmp_path / "repeatability.json"
    path.write_text(json.dumps(saved))

    assert cv_anatomy.main([str(path), "--sizes"]) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[2]: line for line in out.splitlines()
            if line.startswith("| vector_add | fp32 | ") and line.count("|") == 11}  # the size rows
    assert rows["0"].endswith("| 2 | " + rows["0"].split(" | ")[8] + " | slow samples |")
    assert rows["1"].endswith("| drift |")
    assert rows["2"].endswith("| spread |")
    assert "3" not in rows and "4" not in rows  # too short; within the goal
    assert any(line.startswith("| rms_norm | fp32 | 0 | 50.0 |") and line.endswith("| spread |")
               for line in out.splitlines())
    assert "| vector_add | fp32 | 4 | 3 | 1 | 1 | 1 |" in out
    assert "CV of 2 % or more at 4 of 5 sizes of 10 us or more: 1 slow samples, 1 drift, 2 spread" in out


def test_a_json_without_samples_says_so(tmp_path, capsys):
    path = tmp_path / "old.json"
    path.write_text(json.dumps([{"task": "elu", "precision": "fp32", "runs": {
        "protocol": "queued", "reference": {"0": {"mean_ms": 0.1}}, "after-1": {"0": {"mean_ms": 0.1}}}}]))
    assert cv_anatomy.main([str(path)]) == 1
    assert "no size of 10 us or more with samples" in capsys.readouterr().err
