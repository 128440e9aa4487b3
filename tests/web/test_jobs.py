"""How a GPU job starts (apps/runs/jobs.py): the task revision check, the no-GPU and crash paths of
runs and manual turns alike."""

import dataclasses
import shutil

import pytest

from apps.catalog.models import Task
from apps.catalog.services import tasks_sync
from apps.runs.execution import manual_turn_evaluate
from apps.runs.jobs import job_guard, job_start
from apps.runs.manual import turn_submit_manual
from apps.runs.models import Run, RunStatus, TurnKind
from apps.runs.services import RunConfig, run_create
from worker.engine import toolchain
from worker.engine.gpu import GpuInfo
from worker.engine.revision import task_revision

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpu_present(monkeypatch):
    gpu = GpuInfo(index=0, name="Pretended GPU (tests)", uuid="GPU-pretended", compute_capability="9.0",
                  memory_mib=81559, driver="pretended")
    pretended = dataclasses.replace(toolchain.detect(), gpu=gpu, gpu_reason="", arch=gpu.arch)
    monkeypatch.setattr(toolchain, "detect", lambda: pretended)


@pytest.fixture
def no_gpu(monkeypatch):
    absent = dataclasses.replace(toolchain.detect(), gpu=None, gpu_reason="nvidia-smi not found")
    monkeypatch.setattr(toolchain, "detect", lambda: absent)


@pytest.fixture
def tasks_dir(tmp_path, settings):
    """A tasks folder of one task that the test may edit."""
    shutil.copytree(settings.TASKS_DIR / "mskernelbench" / "vector_add", tmp_path / "mskernelbench" / "vector_add")
    settings.TASKS_DIR = tmp_path
    tasks_sync(tmp_path)
    return tmp_path


@pytest.fixture
def vector_add(tasks_dir):
    return Task.objects.get(operator="vector_add", precision="fp32")


def test_sync_stores_the_folder_revision_and_a_launched_run_records_it(vector_add, tasks_dir, user):
    assert vector_add.revision == task_revision(tasks_dir / "mskernelbench" / "vector_add")
    run = run_create(owner=user, task=vector_add, config=RunConfig(model="m"), dispatch=False)
    assert run.task_revision == vector_add.revision and run.short_task_revision == vector_add.revision[:12]


def test_a_run_whose_task_is_unchanged_starts(vector_add, user, gpu_present):
    run = run_create(owner=user, task=vector_add, config=RunConfig(model="m"), dispatch=False)
    job = job_start(run.pk)
    assert job is not None and job.run.pk == run.pk and job.spec.name == "vector_add"
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.error == ""


def test_a_started_run_records_which_gpu_ran_it(vector_add, user, gpu_present):
    run = run_create(owner=user, task=vector_add, config=RunConfig(model="m"), dispatch=False)
    job_start(run.pk)
    run.refresh_from_db()
    assert (run.gpu_name, run.gpu_index, run.gpu_uuid) == ("Pretended GPU (tests)", 0, "GPU-pretended")
    info = run.events.get(type="worker.info").payload
    assert (info["gpu_index"], info["gpu_uuid"]) == (0, "GPU-pretended")


def test_a_run_whose_task_changed_after_launch_fails_and_says_so(vector_add, tasks_dir, user, gpu_present):
    run = run_create(owner=user, task=vector_add, config=RunConfig(model="m"), dispatch=False)
    folder = tasks_dir / "mskernelbench" / "vector_add"
    (folder / "NOTES.md").write_text("an edit after the launch")
    assert job_start(run.pk) is None
    run.refresh_from_db()
    now = task_revision(folder)
    assert run.status == RunStatus.FAILED
    assert run.error == (f"the task changed since this run was launched: launched with revision "
                         f"{vector_add.revision[:12]}…, the folder now is {now[:12]}…; launch a new run")


def test_a_run_without_a_recorded_revision_is_not_checked(vector_add, tasks_dir, user, gpu_present):
    run = run_create(owner=user, task=vector_add, config=RunConfig(model="m"), dispatch=False)
    Run.objects.filter(pk=run.pk).update(task_revision="")  # a run from before revisions were kept
    (tasks_dir / "mskernelbench" / "vector_add" / "NOTES.md").write_text("changed")
    assert job_start(run.pk) is not None


def test_a_crash_fails_the_run_with_a_readable_error(vector_add, user, gpu_present):
    run = run_create(owner=user, task=vector_add, config=RunConfig(model="m"), dispatch=False)
    assert job_start(run.pk) is not None
    with job_guard(run.pk, "pipeline"):
        raise KeyError("boom")
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error == "internal error in the pipeline: KeyError: 'boom'"


def test_a_manual_turn_on_a_finished_run_marks_only_the_turn(vector_add, user, no_gpu):
    run = Run.objects.create(task=vector_add, owner=user, model="m", status=RunStatus.SUCCEEDED)
    run.turns.create(round_index=0, kind=TurnKind.BASELINE, verdict="ok", valid=True, score=1.0)
    turn = turn_submit_manual(run=run, code="// mine", dispatch=False)
    manual_turn_evaluate(turn.pk)
    run.refresh_from_db()
    turn.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and run.error == ""
    assert turn.verdict == "no_gpu" and turn.reason.startswith("No NVIDIA GPU") and turn.parent.round_index == 0
    assert list(run.events.values_list("type", flat=True))[-1] == "turn.finished"
