"""The rough edges a newcomer hit: KernelBench level 4 file names, a CPU-only PyTorch compile check, the worker
log on a failed run, nvcc flags shown twice, raw floats from the importers, and `make run`'s CUDA tools.
(The task export/import round trip is tests/web/test_task_round_trip.py.)"""

from __future__ import annotations

import io
import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.catalog.models import Task
from tests.support.formats import MATMUL
from worker.formats.cuda.flags import check_flags, dedupe_flags
from worker.importers import HF_REASON

ROOT = Path(__file__).resolve().parents[2]
# The shape of a KernelBench level 4 problem: a Hugging Face model built from the Hub (written for this test).
HF_PROBLEM = '''import torch
from transformers import AutoConfig, AutoModelForCausalLM

model_name = "EleutherAI/gpt-neo-125m"
config = AutoConfig.from_pretrained(model_name)


class Model(torch.nn.Module):
    def __init__(self, model_name, config):
        super().__init__()
        self.model = AutoModelForCausalLM.from_pretrained(model_name, config=config)

    def forward(self, x):
        return self.model(x).logits


def get_inputs():
    return [torch.randint(0, 1000, (2, 16))]


def get_init_inputs():
    return [model_name, config]
'''


@pytest.fixture
def dirs(settings, tmp_path):
    settings.TASKS_DIR = tmp_path / "tasks"
    settings.VAR_DIR = tmp_path / "var"
    settings.TASKS_DIR.mkdir()
    return settings.TASKS_DIR


# ---------------------------------------------------------------------------------- KernelBench level 4


@pytest.mark.django_db
def test_import_kernelbench_reads_hyphenated_level4_names_and_says_exactly_why_a_hub_model_is_skipped(
        dirs, tmp_path):
    level4 = tmp_path / "KernelBench" / "KernelBench" / "level4"
    level4.mkdir(parents=True)
    (level4 / "1_EleutherAI-gpt-neo-125m_bs2_sl16.py").write_text(HF_PROBLEM, encoding="utf-8")
    (level4 / "2_Square-matmul.v2.py").write_text(MATMUL, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    call_command("import_kernelbench", str(tmp_path / "KernelBench"), stdout=out, stderr=err)
    assert list(Task.objects.values_list("suite", "operator")) == [("kernelbench-l4", "2_Square_matmul_v2")]
    assert f"skipped   KernelBench/level4/1_EleutherAI-gpt-neo-125m_bs2_sl16.py: {HF_REASON}" in err.getvalue()
    assert "not a KernelBench problem file name" not in err.getvalue() and "ignored" not in err.getvalue()


# ---------------------------------------------------------------------------------- CPU-only PyTorch


def test_a_kernelbench_compile_check_on_cpu_only_pytorch_says_what_to_do_instead_of_a_traceback(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.version.cuda is not None:
        pytest.skip("this PyTorch is a CUDA build: it can build extensions")
    candidate = ROOT / "tests" / "worker" / "fixtures" / "kernelbench" / "candidates" / "cuda_relu.py"
    report = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "worker", "eval", "--task", "kernelbench-examples/scale_bias_leaky_relu",
         "--precision", "fp32", "--candidate", str(candidate), "--compile-only", "--json", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "its PyTorch" in output and "is a CPU-only build. Install a CUDA build of PyTorch" in output
    assert "Traceback" not in output and "OSError" not in output
    data = json.loads(report.read_text())
    assert data["compile"]["log"].startswith("cannot build CUDA extensions on this host")


# ---------------------------------------------------------------------------------- worker log


@pytest.mark.django_db(transaction=True)
def test_a_failed_run_is_logged_at_warning_with_its_id_and_reason(make_run, user, caplog):
    from apps.runs.services import run_transition

    run = make_run(user)
    with caplog.at_level(logging.INFO, logger="apps.runs.services"):
        assert run_transition(run.pk, "failed", error="No NVIDIA GPU on worker host w1")
    records = [r for r in caplog.records if r.name == "apps.runs.services"]
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (logging.WARNING, f"run {run.pk} failed: No NVIDIA GPU on worker host w1")]


# ---------------------------------------------------------------------------------- nvcc flags


@pytest.mark.parametrize("proposal, expected", [
    ("nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v", "nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v"),
    ("-O3 -O3 -Xptxas -v,-O3 -Xptxas=-v --ptxas-options=-v -lineinfo -lineinfo",
     "nvcc -O3 -Xptxas -v -Xptxas -O3 -lineinfo -arch=sm_90"),
    ("-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=sm_90 -lcublas -lcublas",
     "nvcc -gencode arch=compute_90,code=sm_90"),
])
def test_accepted_flags_name_each_option_once_however_the_proposal_repeats_it(proposal, expected):
    check = check_flags(proposal, "sm_90", ("cublas",))
    assert check.ok and check.command == expected
    assert check.libraries in ((), ("cublas",))


def test_dedupe_keeps_order_and_values_of_paired_options():
    assert dedupe_flags(["-Xptxas", "-v,-O2", "-O3", "-Xptxas", "-O2", "-O3"]) == ("-Xptxas", "-v", "-Xptxas", "-O2",
                                                                                 "-O3")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_nvcc_command_of_a_real_build_shows_ptxas_verbose_once(tmp_path):
    """The system adds -Xptxas -v itself (registers and spills for the viewer): a proposal that also asks for it,
    in a comma list, must not make the command show it twice."""
    candidate = ROOT / "tests" / "gpu_candidates" / "RELU_fast.cu"
    report = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "worker", "eval", "--task", "RELU", "--precision", "fp32", "--candidate",
         str(candidate), "--compile-only", "--flags", "nvcc -O3 -Xptxas -v,-O3 -lineinfo -lineinfo",
         "--json", str(report)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    command = json.loads(report.read_text())["compile"]["command"]
    assert command.count("-v") == 1 and command.count("-lineinfo") == 1, command


# ---------------------------------------------------------------------------------- importers' numbers


@pytest.mark.django_db
def test_import_trajectory_reports_formatted_numbers_not_raw_floats(settings, admin_user):
    from apps.catalog.services import tasks_sync

    tasks_sync(settings.TASKS_DIR)
    out = io.StringIO()
    call_command("import_trajectory", str(ROOT / "demo" / "trajectories" / "softmax_fp32_trajectory.json"),
                 stdout=out)
    line = out.getvalue()
    assert re.search(r"\(succeeded, best P \d+(\.\d\d)?× \(turn \d+\.\d+\), \d+ turns", line), line
    assert not re.search(r"\d+\.\d{4,}", line), line  # no 180.45522529100995


# ---------------------------------------------------------------------------------- make run


def test_make_run_fetches_the_cuda_tools_the_ptx_sass_tab_needs():
    """`make -n run` (a dry run, nothing executed) lists .cuda-libs/.ready's recipe when it is not built yet."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    run_rule = re.search(r"^run:(?!\s*export)(.*)$", makefile, flags=re.M)  # its prerequisites, not a variable
    assert run_rule and ".cuda-libs/.ready" in run_rule.group(1).split()
    assert "nvidia-cuda-cuobjdump" in makefile and "nvidia-cuda-nvdisasm" in makefile


def _listing_tools() -> bool:
    from worker.engine import assembly

    return shutil.which("nvcc") is not None and all(assembly.tools())


@pytest.mark.slow
@pytest.mark.skipif(not _listing_tools(), reason="needs nvcc, cuobjdump and nvdisasm (make .cuda-libs/.ready)")
@pytest.mark.django_db
def test_a_demo_run_imported_with_assembly_has_ptx_and_sass_in_the_viewer(settings, admin_user, client):
    """The demo trajectories were recorded without listings; --assembly compiles their turns again (no GPU)."""
    from apps.catalog.services import tasks_sync
    from apps.runs.models import Run, TurnAssembly

    tasks_sync(settings.TASKS_DIR)
    out = io.StringIO()
    call_command("import_trajectory", str(ROOT / "demo" / "trajectories" / "softmax_fp32_trajectory.json"),
                 "--public", "--assembly", stdout=out)
    run = Run.objects.get()
    listed = TurnAssembly.objects.filter(turn__run=run)
    assert listed.exists(), out.getvalue()
    assert f"PTX/SASS listed for {listed.count()} turn(s)" in out.getvalue()
    assert "turn 1.0: " in out.getvalue()  # the turn that did not compile says why it has none
    best = run.best_turn
    html = client.get(f"/runs/{run.pk}/?turn={best.round_index}.{best.debug_index}").content.decode()
    assert "listing-ptx" in html and ".entry" in html and "listing-sass" in html
