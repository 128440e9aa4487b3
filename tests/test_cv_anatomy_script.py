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


def table(out: str, header: str) -> list[dict]:
    """The rows of the markdown table whose header starts with `header`, keyed by column."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    keys = [k.strip() for k in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(keys, (v.strip() for v in line.strip("|").split("|")), strict=True)))
    return rows


def test_each_size_over_the_goal_is_sorted_by_what_its_samples_show(tmp_path, capsys):
    slow = steady(0.1)
    slow[[7, 31]] = 0.2  # two samples twice as long: the rest lie within 0.2 %
    drift = 0.1 * np.linspace(1.0, 1.08, 50) * (1 + RNG.normal(0, 0.001, 50))
    spread = 0.1 * (1 + RNG.normal(0, 0.05, 50))
    alternating = 0.1 * (1 + 0.04 * np.resize([1, -1], 50)) * (1 + RNG.normal(0, 0.002, 50))
    short = 0.005 * (1 + RNG.normal(0, 0.2, 50))  # 5 us: below --min-us, not counted however wide
    after = {"0": timing(slow), "1": timing(drift), "2": timing(spread), "3": timing(short),
             "4": timing(steady(0.1)), "5": timing(alternating), "floor": 0.01}
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
    sizes = {(r["task"], r["size"]): r for r in table(out, "| task | prec | size |")}
    assert sizes["vector_add", "0"]["kind"] == "slow samples" and sizes["vector_add", "0"]["slow samples"] == "2"
    assert float(sizes["vector_add", "0"]["CV without slow samples"].rstrip("%")) < 2
    assert sizes["vector_add", "1"]["kind"] == "drift"
    assert sizes["vector_add", "2"]["kind"] == "spread"
    assert sizes["vector_add", "5"]["kind"] == "alternating" and float(sizes["vector_add", "5"]["lag-1"]) < -0.9
    assert ("vector_add", "3") not in sizes and ("vector_add", "4") not in sizes  # too short; within the goal
    assert sizes["rms_norm", "0"]["call (us)"] == "50.0" and sizes["rms_norm", "0"]["kind"] == "spread"
    tasks = {r["task"]: r for r in table(out, "| task | prec | sizes >=")}
    assert [tasks["vector_add"][k] for k in ("sizes >= 10 us", "CV >= 2 %", "slow samples", "alternating", "drift",
                                            "spread")] == ["5", "4", "1", "1", "1", "1"]
    assert ("CV of 2 % or more at 5 of 6 sizes of 10 us or more: 1 slow samples, 1 alternating, 1 drift, 2 spread"
            in out)


def test_a_json_without_samples_says_so(tmp_path, capsys):
    path = tmp_path / "old.json"
    path.write_text(json.dumps([{"task": "elu", "precision": "fp32", "runs": {
        "protocol": "queued", "reference": {"0": {"mean_ms": 0.1}}, "after-1": {"0": {"mean_ms": 0.1}}}}]))
    assert cv_anatomy.main([str(path)]) == 1
    assert "no size of 10 us or more with samples" in capsys.readouterr().err
