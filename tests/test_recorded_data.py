"""The GPU measurements kept as data (demo/h100-library.json) give the numbers the docs quote.

docs/bottleneck-census.md quotes the Otsu thresholds and class counts of the H100 census, and
docs/experiments.md points LIBRARY_REFERENCES_FILE at the same file for the library references.
"""

import json
from collections import Counter
from pathlib import Path

import pytest

from worker.engine import ncu

DATA = Path(__file__).resolve().parents[1] / "demo" / "h100-library.json"
ROWS = json.loads(DATA.read_text(encoding="utf-8"))["census_rows"]


def _triples(precision=None):
    return [(r["compute"], r["dram"], r["memory"]) for r in ROWS if precision in (None, r["precision"])]


@pytest.mark.parametrize(("precision", "documented"), [
    (None, (38.16, 24.32, 45.80)),
    ("fp32", (39.38, 29.11, 44.18)),
    ("bf16", (38.16, 17.93, 47.20)),
])
def test_the_h100_census_gives_the_documented_otsu_thresholds(precision, documented):
    t = ncu.otsu_thresholds(_triples(precision)).thresholds
    assert (round(t.compute, 2), round(t.dram, 2), round(t.memory, 2)) == pytest.approx(documented, abs=0.006)


def test_the_h100_census_gives_the_documented_class_counts():
    assert len(ROWS) == 100 and Counter(r["precision"] for r in ROWS) == {"fp32": 50, "bf16": 50}
    otsu = ncu.otsu_thresholds(_triples()).thresholds

    def counts(thresholds, precision=None):
        found = Counter(str(ncu.classify_values(c, d, m, thresholds)) for c, d, m in _triples(precision))
        return found["compute_bound"], found["memory_latency_bound"], found["memory_bandwidth_bound"]

    assert counts(otsu, "fp32") == (16, 27, 7)
    assert counts(otsu, "bf16") == (17, 27, 6)
    assert counts(otsu) == (33, 54, 13)
    assert counts(ncu.Thresholds()) == (39, 54, 7)  # the paper's 30/30/30


def test_the_library_references_load_as_the_experiments_read_them():
    from apps.experiments.selectors import load_library_references

    references = load_library_references(DATA)
    # 18 references were measured on 2026-11-22 (spmm_csr BF16 was incorrect in that run, fixed and re-run
    # later) and 8 on 2026-11-26: every operator of the demo experiment has its reference.
    assert len(references) == 25 and ("spmm_csr", "bf16") not in references
    demo = {"RELU", "dot_product", "matrix_transpose", "prefix_sum", "rms_norm", "vector_add"}
    assert all((op, p) in references for op in demo for p in ("fp32", "bf16"))
    matmul = references[("matrix_mul", "fp32")]
    assert matmul.score is not None and matmul.speedups[-1] == pytest.approx(8.99, abs=0.005)
