"""bench/gpu_run.sh and bench/gpu_shards.sh without a GPU: they parse, gpu_run.sh lists its stages and every file
its commands name exists, gpu_shards.sh gives each shard a GPU and returns their output in one tarball."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "gpu_run.sh"


def gpu_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("script", ["gpu_run.sh", "gpu_shards.sh", "wheels.sh"])
def test_the_script_parses_and_shellcheck_finds_nothing(script):
    path = ROOT / "bench" / script
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck not installed")
    found = subprocess.run(["shellcheck", "-x", str(path)], capture_output=True, text=True, cwd=ROOT)
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


def test_the_limit_is_the_whole_calls_time_not_each_commands(tmp_path):
    # Three stages whose commands would each run a minute (the interpreter only sleeps): with --limit 4 they
    # end together within it, as a device call's limit needs, not after 3 x 4 s.
    slow = tmp_path / "python"
    slow.write_text("#!/bin/sh\nexec sleep 60\n")
    slow.chmod(0o755)
    started = time.monotonic()
    done = subprocess.run(["bash", str(SCRIPT), "--no-wheels", "--limit", "4", "--out", str(tmp_path / "out"),
                           "tests", "tests-formats", "candidates"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHON": str(slow), "KW_CUDA_EXTRA": str(tmp_path)})
    took = time.monotonic() - started
    assert done.returncode == 1 and "stages that failed: tests tests-formats candidates" in done.stdout
    assert took < 9, f"{took:.1f} s: each command got the whole limit again"


def test_a_gpu_test_may_wait_for_the_gpus_lock_longer_than_the_projects_test_timeout():
    # Many pytest workers on one GPU queue for its lock; the project's 300 s timeout failed tests that never ran.
    dry = gpu_run("--dry-run", "tests")
    assert "-o timeout=900" in dry.stdout
    mine = subprocess.run(["bash", str(SCRIPT), "--dry-run", "tests"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTEST_TIMEOUT": "1200"})
    assert "-o timeout=1200" in mine.stdout


def test_an_unknown_stage_or_option_is_refused():
    assert gpu_run("no-such-stage").returncode == 2
    assert gpu_run("--frobnicate", "env").returncode == 2


SHARDS = ROOT / "bench" / "gpu_shards.sh"


def gpu_shards(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SHARDS), *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def test_each_shard_gets_a_gpu_of_its_own_and_its_own_assignments(tmp_path):
    dry = gpu_shards("--dry-run", "--limit", "100", "--out", str(tmp_path),
                     "STAGES=tests-formats PYTEST_ARGS='-n 4'",
                     "STAGES='tests env' KW_LOCKDOWN=1 PYTEST_ARGS='-k \"a or b\"'")
    assert dry.returncode == 0, dry.stderr
    first, second = dry.stdout.splitlines()
    assert first.startswith("gpu0: CUDA_VISIBLE_DEVICES=0 STAGES=tests-formats PYTEST_ARGS='-n 4' "
                            "bash bench/gpu_run.sh")
    assert first.endswith(f"--limit 100 --out {tmp_path}/gpu0 tests-formats")
    assert second.startswith("gpu1: CUDA_VISIBLE_DEVICES=1 ") and "KW_LOCKDOWN=1" in second
    assert second.endswith(f"--out {tmp_path}/gpu1 tests env")
    assert not any(tmp_path.iterdir())  # a dry run writes nothing
    missing = gpu_shards("--dry-run", "PYTEST_ARGS=x")
    assert missing.returncode == 2 and "sets no STAGES" in missing.stderr


def test_shards_run_side_by_side_and_their_output_comes_back_in_one_tarball(tmp_path):
    done = gpu_shards("--out", str(tmp_path), "STAGES=env", "STAGES=env", WHEELS=str(tmp_path / "no-wheels"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "gpu0" / "env.txt").is_file() and (tmp_path / "gpu1" / "env.txt").is_file()
    with tarfile.open(tmp_path / "shards.tgz") as tar:
        names = set(tar.getnames())
    assert {"./gpu0/env.txt", "./gpu1/env.txt", "./gpu0.txt", "./gpu1.txt"} <= names


def test_a_bundle_holds_only_the_tarball_and_a_summary_of_each_shard(tmp_path):
    # The interpreter stands in for pytest: it prints what a GPU test run prints.
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'PASSED tests/a.py::test_one'\necho 'FAILED tests/a.py::test_two'\n"
                    "echo '========= 1 failed, 1 passed in 2.00s ========='\nexit 1\n")
    fake.chmod(0o755)
    bundle = tmp_path / "bundle"
    done = gpu_shards("--out", str(tmp_path / "out"), "--bundle", str(bundle), "STAGES=tests", "STAGES=tests",
                      WHEELS=str(tmp_path / "no-wheels"), PYTHON=str(fake), KW_CUDA_EXTRA=str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr  # a test failed
    assert sorted(p.name for p in bundle.iterdir()) == ["shards.tgz", "summary.txt"]
    summary = (bundle / "summary.txt").read_text()
    for k in (0, 1):
        shard = summary.split(f"== gpu{k}: STAGES=tests\n")[1].split("== gpu")[0]
        assert "PASSED tests/a.py::test_one" in shard and "FAILED tests/a.py::test_two" in shard
        assert "1 failed, 1 passed" in shard and "stages that failed: tests" in shard


def wheel(folder: Path, name: str, body: str) -> Path:
    """A one-module wheel, written by hand (the format is a zip with its metadata)."""
    import base64
    import hashlib
    import zipfile

    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    files = {f"{name}.py": body, f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}

    def digest(text: str) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()

    record = "".join(f"{k},sha256={digest(v)},{len(v.encode())}\n" for k, v in files.items())
    with zipfile.ZipFile(path, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr(f"{info}/RECORD", record + f"{info}/RECORD,,\n")
    return path


def install_wheels(wheels: Path, target: Path) -> subprocess.CompletedProcess:
    python = sys.executable  # the test's own interpreter has pip
    script = (f". bench/wheels.sh && install_wheels {python} {wheels} {target} && "
              f"{python} -c 'import kwdemo; print(kwdemo.X)'")
    return subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_wheels_of_a_folder_are_installed_and_importable_where_the_scripts_run(tmp_path):
    (tmp_path / "wheels").mkdir()
    wheel(tmp_path / "wheels", "kwdemo", "X = 42\n")
    done = install_wheels(tmp_path / "wheels", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"


def test_a_broken_wheel_stops_the_script_with_a_message(tmp_path):
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "kwdemo-1.0-py3-none-any.whl").write_text("not a zip")
    done = install_wheels(tmp_path / "wheels", tmp_path / "site")
    assert done.returncode != 0 and f"could not install the wheels of {tmp_path / 'wheels'}/" in done.stderr


def test_every_call_logs_the_gpus_clock_and_its_summary_names_a_slowdown(tmp_path):
    # nvidia-smi stands in: a one-shot query answers, the poll prints a header and power-capped readings.
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text("""#!/bin/bash
case " $* " in *" -lms "*) ;; *) echo "0x0000000000000004"; exit 0 ;; esac
echo "timestamp, index, clocks.current.sm [MHz], clocks.max.sm [MHz], clocks_event_reasons.active, power.draw [W], x"
while :; do echo "$(date '+%Y/%m/%d %H:%M:%S.%3N'), 0, 1455, 1980, 0x0000000000000004, 700.0, 35"; sleep 0.1; done
""")
    smi.chmod(0o755)
    bundle = tmp_path / "bundle"
    env = {**os.environ, "PATH": f"{smi.parent}{os.pathsep}{os.environ['PATH']}", "PYTHON": sys.executable,
           "WHEELS": str(tmp_path / "no-wheels")}
    done = subprocess.run(["bash", str(SCRIPT), "--out", str(tmp_path / "out"), "--bundle", str(bundle), "env"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "clocks.csv").stat().st_size > 0
    summary = (bundle / "summary.txt").read_text()
    assert re.search(r"^clock log: \d+ readings over \d+ s, SM clock maximum 1980 MHz; .*slowed in \d+ readings, "
                     r"1 episodes:$", summary, re.M), summary
