"""KernelBench and task.yaml tasks in the web app: sync, the two import commands, the admin import of
mixed archives, catalog pages, the manual-turn form, a run on a host without a GPU, and expert-relative
speed in the experiment analyses."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.catalog.models import Task
from apps.catalog.services import tasks_sync
from tests.support.formats import EXAMPLE_TASKS, MATMUL, write_kernelbench_checkout, write_yaml_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def dirs(settings, tmp_path):
    settings.TASKS_DIR = tmp_path / "tasks"
    settings.VAR_DIR = tmp_path / "var"
    settings.TASKS_DIR.mkdir()
    return settings.TASKS_DIR


@pytest.fixture
def examples(dirs):
    for suite in ("kernelbench-examples", "cudahercules-examples"):
        shutil.copytree(EXAMPLE_TASKS / suite, dirs / suite)
    report = tasks_sync(dirs)
    assert report.errors == []
    return dirs


def run_command(name: str, *args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------------------------- sync


def test_sync_mirrors_each_format_with_its_backend_and_details(examples):
    fused = Task.objects.get(operator="scale_bias_leaky_relu", precision="bf16")
    assert (fused.backend, fused.suite, fused.category, fused.entry_point) == (
        "pytorch", "kernelbench-examples", "fusion", "ModelNew")
    assert fused.rules == {"forbid_torch_compute": False} and fused.details["compare_compile"] is True
    assert fused.sizes == [{"batch_size": 8192, "features": 4096, "scale": 0.5, "negative_slope": 0.01}]
    assert "class Model(nn.Module)" in fused.baseline_source and (fused.atol, fused.rtol) == (1e-2, 1e-2)
    made = Task.objects.get(suite="cudahercules-examples")
    assert (made.backend, made.precision, made.entry_point) == ("make", "fp32", "solution.cu")
    assert made.details["build"] == "make test" and made.details["min_sm"] == 80
    assert made.rules["required_patterns"] == ["__global__\\s+void", "<<<.*>>>"]
    assert tasks_sync(examples).created == []  # idempotent


# ---------------------------------------------------------------------------------------------- commands


def test_import_kernelbench_imports_the_dataset_levels_and_names_every_file_it_skips(dirs, tmp_path):
    checkout = write_kernelbench_checkout(tmp_path / "KernelBench-main")
    out, err = run_command("import_kernelbench", str(checkout))
    assert "imported 2 task folder(s): 2 task(s) created, 0 updated, 0 unchanged; 1 skipped" in out
    assert "skipped   KernelBench/level1/7_Broken_problem.py" in err and "get_inputs" in err
    assert "ignored   KernelBench/level1/helpers.py" in err
    assert set(Task.objects.values_list("suite", "operator", "backend")) == {
        ("kernelbench-l1", "1_Square_matrix_multiplication", "pytorch"),
        ("kernelbench-l2", "3_Add_bias_ReLU", "pytorch"),
    }
    assert (dirs / "kernelbench-l1" / "1_Square_matrix_multiplication" / "model.py").read_text() == MATMUL

    again, _ = run_command("import_kernelbench", str(checkout))
    assert "0 task(s) created, 0 updated, 2 unchanged" in again
    assert Task.objects.count() == 2


def test_import_kernelbench_takes_one_level_both_precisions_and_a_dry_run(dirs, tmp_path):
    checkout = write_kernelbench_checkout(tmp_path / "kb")
    out, _ = run_command("import_kernelbench", str(checkout / "KernelBench"), "--level", "2", "--precision", "fp32",
                         "--precision", "bf16", "--dry-run")
    assert "dry run: 1 task folder(s) would be written" in out and Task.objects.count() == 0
    assert not any(dirs.iterdir())
    run_command("import_kernelbench", str(checkout / "KernelBench"), "--level", "2", "--precision", "fp32",
                "--precision", "bf16")
    assert sorted(Task.objects.values_list("precision", flat=True)) == ["bf16", "fp32"]


def test_import_kernelbench_with_nothing_usable_fails_with_the_reasons(dirs, tmp_path):
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "2_Nothing.py").write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(CommandError, match="none of the 1 item"):
        run_command("import_kernelbench", str(tmp_path))
    with pytest.raises(CommandError, match="does not exist"):
        run_command("import_kernelbench", str(tmp_path / "nowhere"))


def test_import_taskyaml_files_good_folders_under_the_suite_and_reports_broken_ones(dirs, tmp_path):
    write_yaml_task(tmp_path / "hercules" / "class1", "gemm_softmax")
    write_yaml_task(tmp_path / "hercules" / "class1", "broken", **{"backend: class1_make": "backend: class2_def"})
    out, err = run_command("import_taskyaml", str(tmp_path / "hercules"), "--suite", "hercules")
    assert "imported 1 task folder(s): 1 task(s) created" in out
    assert "broken: [runner.backend]" in err and "not supported" in err
    task = Task.objects.get()
    assert (task.suite, task.operator, task.backend) == ("hercules", "gemm_softmax", "make")
    assert (dirs / "hercules" / "gemm_softmax" / "task.yaml").is_file()
    again, _ = run_command("import_taskyaml", str(tmp_path / "hercules"), "--suite", "hercules")
    assert "1 unchanged" in again
    with pytest.raises(CommandError, match="cannot be a suite name"):
        run_command("import_taskyaml", str(tmp_path / "hercules"), "--suite", "../up")


# ---------------------------------------------------------------------------------------------- admin import


def _zip(files: dict[str, bytes]) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    buffer.seek(0)
    buffer.name = "mixed.zip"
    return buffer


def test_the_admin_import_previews_a_mixed_archive_then_writes_what_loads(admin_client, dirs, tmp_path):
    yaml_dir = write_yaml_task(tmp_path, "gemm_softmax")
    files = {f"hercules/gemm_softmax/{p.name}": p.read_bytes() for p in yaml_dir.iterdir()}
    files["kernelbench/level1/1_Square_matmul.py"] = MATMUL.encode()
    files["kernelbench/level1/9_No_model.py"] = b"def get_inputs():\n    return []\n"
    response = admin_client.post("/admin/catalog/task/import/", {
        "step": "preview", "archive": _zip(files), "suite": "hercules-import", "precisions": ["fp32", "bf16"]})
    preview = response.context["preview"]
    assert sorted(i.target for i in preview.ok_items) == ["hercules-import/gemm_softmax",
                                                         "kernelbench-l1/1_Square_matmul"]
    assert [(i.folder, "class Model" in i.error) for i in preview.bad_items] == [
        ("kernelbench/level1/9_No_model.py", True)]
    html = response.content.decode()
    assert "9_No_model.py" in html and "Nothing has been written yet" in html
    assert not any(dirs.iterdir()) and Task.objects.count() == 0

    admin_client.post("/admin/catalog/task/import/", {"step": "confirm", "token": preview.token})
    assert set(Task.objects.values_list("suite", "operator", "precision")) == {
        ("hercules-import", "gemm_softmax", "fp32"),
        ("kernelbench-l1", "1_Square_matmul", "fp32"), ("kernelbench-l1", "1_Square_matmul", "bf16")}


def test_the_admin_import_refuses_a_bad_suite_name_before_staging(admin_client, dirs):
    response = admin_client.post("/admin/catalog/task/import/", {
        "step": "preview", "archive": _zip({"x/level1/1_A.py": MATMUL.encode()}), "suite": "a/b"})
    assert "cannot be a suite name" in response.content.decode()
    assert not (Path(dirs).parent / "var" / "task-imports").exists() or not any(
        (Path(dirs).parent / "var" / "task-imports").iterdir())


# ---------------------------------------------------------------------------------------------- pages


def test_catalog_pages_show_each_format_for_what_it_is(client, user, examples):
    client.force_login(user)
    listing = client.get(reverse("catalog:list")).content.decode()
    assert "KernelBench" in listing and "task.yaml" in listing and "scale_bias_leaky_relu" in listing
    fused = Task.objects.get(operator="scale_bias_leaky_relu", precision="fp32")
    page = client.get(reverse("catalog:detail", args=[fused.pk])).content.decode()
    assert "Interface (KernelBench format)" in page and "class ModelNew(nn.Module)" in page
    assert "Reference module" in page and "batch_size = 8192" in page
    assert '<span class="k">class</span>' in page  # highlighted as Python
    made = Task.objects.get(suite="cudahercules-examples")
    page = client.get(reverse("catalog:detail", args=[made.pk])).content.decode()
    assert "Interface (task.yaml format)" in page and "<code>make test</code>" in page
    assert "sm_80 or newer" in page and "Original solution file" in page and "reference_vector_add" in page
    api = client.get("/api/tasks/", {"backend": "make"}).json()
    assert [t["operator"] for t in api["results"]] == ["vector_add_make"] and api["results"][0]["backend"] == "make"


def test_the_manual_turn_form_follows_the_task_format(client, user, examples):
    client.force_login(user)
    fused = Task.objects.get(operator="scale_bias_leaky_relu", precision="fp32")
    page = client.get(reverse("runs:task_evaluate", args=[fused.pk])).content.decode()
    assert 'data-editor="python"' in page and "class ModelNew" in page and 'name="flags"' not in page
    made = Task.objects.get(suite="cudahercules-examples")
    page = client.get(reverse("runs:task_evaluate", args=[made.pk])).content.decode()
    assert 'data-editor="cuda"' in page and "solution file" in page and 'name="flags"' not in page


def test_a_kernelbench_run_on_a_host_without_a_gpu_fails_with_the_reason(user, examples, monkeypatch):
    from apps.runs.execution import run_execute
    from apps.runs.models import Run
    from apps.runs.services import RunConfig, run_create
    from worker.engine import toolchain
    chain = toolchain.detect()
    if chain.gpu is not None:
        pytest.skip("asserts the no-GPU ending")
    fused = Task.objects.get(operator="scale_bias_leaky_relu", precision="fp32")
    run = run_create(owner=user, task=fused, config=RunConfig(model="m"), dispatch=False)
    run_execute(run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and "No NVIDIA GPU" in run.error
    assert Run.objects.filter(task=fused).count() == 1


# ---------------------------------------------------------------------------------------------- experiments


def test_expert_relative_speed_comes_from_the_times_measured_with_the_run(user, examples):
    from apps.experiments.analysis import library_comparison
    from apps.experiments.models import Experiment, ExperimentRun
    from apps.experiments.selectors import outcomes_for
    from apps.runs.models import Run, RunStatus, Turn

    made = Task.objects.get(suite="cudahercules-examples")
    fused = Task.objects.get(operator="scale_bias_leaky_relu", precision="fp32")
    experiment = Experiment.objects.create(owner=user, name="formats", model="m", seeds=1)

    def timed(base, cand, ref=None):
        size = {"index": 0, "params": {"case": 1}, "complexity": 1.0, "correct": True,
                "baseline": {"mean_ms": base}, "candidate": {"mean_ms": cand}, "speedup": base / cand}
        if ref is not None:
            size["reference"] = {"mean_ms": ref}
        return [size]

    for task, results, baseline in ((made, timed(8.0, 2.0, ref=1.0), timed(8.0, 8.0, ref=1.0)),
                                    (fused, timed(3.0, 1.5), timed(3.0, 3.0))):
        run = Run.objects.create(owner=user, task=task, model="m", status=RunStatus.SUCCEEDED)
        Turn.objects.create(run=run, round_index=0, debug_index=0, kind="baseline", valid=True, score=1.0,
                            results=baseline)
        best = Turn.objects.create(run=run, round_index=1, debug_index=0, kind="optimize", valid=True,
                                   score=results[0]["speedup"], results=results)
        Run.objects.filter(pk=run.pk).update(best_turn=best, best_score=best.score)
        ExperimentRun.objects.create(experiment=experiment, task=task, run=run, seed_index=0)

    rows = {r.operator: r for r in library_comparison(outcomes_for(experiment, references={})).rows}
    # task.yaml: P 4 over the naive file, the expert 8x over it: s = t_ref / t_gen = 1.0 / 2.0
    assert rows["vector_add_make"].reference_score == 8.0 and rows["vector_add_make"].expert_relative == 0.5
    # KernelBench without torch.compile: eager PyTorch is the expert, so s is the speedup
    assert rows["scale_bias_leaky_relu"].expert_relative == 2.0
