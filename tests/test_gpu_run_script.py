"""bench/gpu_run.sh without a GPU: it parses, lists its stages, and every file its commands name exists."""

import glob
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "gpu_run.sh"


def gpu_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_script_parses_and_shellcheck_finds_nothing():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck not installed")
    found = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True)
    assert found.returncode == 0, found.stdout


def test_every_stage_is_listed_and_shows_its_commands_in_a_dry_run(tmp_path):
    listed = [line.split()[0] for line in gpu_run("--list").stdout.splitlines()]
    assert {"env", "tests", "tests-formats", "library-validate", "candidates", "pipeline-demo", "formats",
            "experiment"} <= set(listed)
    dry = gpu_run("--dry-run", "--out", str(tmp_path / "out"))
    assert dry.returncode == 0, dry.stderr
    for stage in listed:
        block = re.search(rf"^{re.escape(stage)}: .*\n((?:    .*\n)+)", dry.stdout, re.M)
        assert block, f"{stage} shows no command"
    # A dry run runs nothing and writes nothing.
    assert not (tmp_path / "out").exists()


def test_the_files_the_stages_name_exist():
    dry = gpu_run("--dry-run").stdout
    named = set(re.findall(r"\b((?:bench|demo|tests)/[\w./*-]+\.(?:py|json|cu))\b", dry))
    assert "bench/library.py" in named and "tests/gpu_candidates/*_fast.cu" in named
    assert [p for p in sorted(named) if not glob.glob(str(ROOT / p))] == []


def test_an_unknown_stage_or_option_is_refused():
    assert gpu_run("no-such-stage").returncode == 2
    assert gpu_run("--frobnicate", "env").returncode == 2
