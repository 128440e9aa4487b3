"""bench/prebuild.py with the real nvcc: a candidate and a baseline land in the build cache a GPU call carries; a
candidate that should build and does not fails the script, one meant to fail its build does not."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from worker.engine import toolchain as tc

REPO = Path(__file__).parents[1]
_spec = importlib.util.spec_from_file_location("prebuild", REPO / "bench" / "prebuild.py")
prebuild = importlib.util.module_from_spec(_spec)
sys.modules["prebuild"] = prebuild
_spec.loader.exec_module(prebuild)

pytestmark = pytest.mark.skipif(not tc.detect().nvcc, reason="nvcc not found")


def test_a_candidate_and_a_baseline_are_built_into_the_cache(tmp_path, capsys):
    rc = prebuild.main(["--cache", str(tmp_path / "cache"), "--only", "vector_add_fast.cu",
                        "--only", "vector_add_bf16_bad_conversion.cu", "--only", "RELU"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "vector_add_bf16_bad_conversion.cu" in out and "compile_error" in out  # its expected verdict: no failure
    assert "4 built in" in out and ", 0 failed;" in out  # two candidates, RELU in both precisions
    assert len(list((tmp_path / "cache" / "objects").iterdir())) >= 3


def test_a_candidate_that_should_build_and_does_not_fails_the_script(tmp_path, capsys, monkeypatch):
    broken = tmp_path / "vector_add_broken_fast.cu"  # "_fast": expected ok, so it must compile
    shutil.copy(REPO / "tests" / "gpu_candidates" / "vector_add_fast.cu", broken)
    broken.write_text(broken.read_text(encoding="utf-8") + "\nthis is not C++;\n", encoding="utf-8")
    monkeypatch.setattr(prebuild, "CANDIDATE_FILES", [broken])
    rc = prebuild.main(["--candidates", "--cache", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    assert rc == 1 and "compile_error" in out and "1 built in" in out and ", 1 failed;" in out


def test_nothing_to_build_is_refused():
    assert prebuild.main(["--only", "no_such_task"]) == 2
