"""Manual turns: a user's own kernel, compiled with the real nvcc and evaluated like an agent's."""

import dataclasses
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from apps.catalog.models import Task
from apps.catalog.services import tasks_sync
from apps.runs.execution import manual_turn_evaluate
from apps.runs.manual import ManualTurnError, run_create_manual, turn_submit_manual
from apps.runs.models import Run, RunStatus, Turn, TurnKind
from worker.engine import toolchain
from worker.engine.gpu import GpuInfo

pytestmark = pytest.mark.django_db
FAST = (Path(settings.BASE_DIR) / "tests" / "gpu_candidates" / "vector_add_fast.cu").read_text()
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc is not installed")


@pytest.fixture
def gpu_present(monkeypatch):
    """A job starts only on a GPU worker; a build error is found before the GPU is used, so pretend one."""
    real = toolchain.detect()
    if real.gpu is None:
        gpu = GpuInfo(index=0, name="Pretended GPU (tests)", uuid="GPU-pretended", compute_capability="9.0",
                      memory_mib=81559, driver="pretended")
        pretended = dataclasses.replace(real, gpu=gpu, gpu_reason="", arch=gpu.arch)
        monkeypatch.setattr(toolchain, "detect", lambda: pretended)


@pytest.fixture
def vector_add(db):
    tasks_sync(settings.TASKS_DIR)
    return Task.objects.get(operator="vector_add", precision="fp32")


def test_a_manual_turn_is_appended_after_the_last_round(vector_add, user, make_run):
    run = Run.objects.create(task=vector_add, owner=user, model="m")
    run.turns.create(round_index=0, kind=TurnKind.BASELINE)
    run.turns.create(round_index=2, kind=TurnKind.OPTIMIZE)
    turn = turn_submit_manual(run=run, code=FAST, flags="nvcc -O3", dispatch=False)
    assert (turn.round_index, turn.kind, turn.verdict, turn.parent.round_index) == (3, "manual", "queued", 0)
    assert run.events.last().type == "turn.submitted"


@pytest.mark.parametrize(("code", "message"), [("   ", "empty"), ("x" * 300_000, "larger than 256 KiB")])
def test_bad_sources_are_refused_before_anything_is_stored(vector_add, user, code, message):
    with pytest.raises(ManualTurnError, match=message):
        run_create_manual(owner=user, task=vector_add, code=code, dispatch=False)
    assert Run.objects.count() == 0


@needs_nvcc
def test_a_manual_kernel_is_built_and_its_verdict_stored(vector_add, user):
    run = run_create_manual(owner=user, task=vector_add, code=FAST, flags="nvcc -O3 --use_fast_math",
                            dispatch=False)
    manual_turn_evaluate(run.turns.get().pk)
    run.refresh_from_db()
    turn = run.turns.get()
    assert "--use_fast_math" in turn.compile_command
    if toolchain.detect().gpu is None:
        assert turn.verdict == "no_gpu" and run.status == RunStatus.FAILED
        assert run.error.startswith("No NVIDIA GPU on worker host"), run.error
    else:
        assert turn.verdict == "ok" and turn.score and run.status == RunStatus.SUCCEEDED
    types = list(run.events.values_list("type", flat=True))
    assert types[:3] == ["run.queued", "turn.submitted", "run.running"] and "turn.finished" in types


@needs_nvcc
def test_a_manual_kernel_that_does_not_compile_keeps_the_compiler_log(vector_add, user, gpu_present):
    run = run_create_manual(owner=user, task=vector_add, code=FAST.replace("cudaDeviceSynchronize", "cudaSyncX"),
                            dispatch=False)
    manual_turn_evaluate(run.turns.get().pk)
    turn = run.turns.get()
    assert turn.verdict == "compile_error" and 'identifier "cudaSyncX" is undefined' in turn.compile_log
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error.startswith("compile_error")


def test_evaluate_page_queues_a_run_for_the_signed_in_user(client, vector_add, user,
                                                          django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    monkeypatch.setattr("apps.runs.dispatch.enqueue_manual_turn", sent.append)
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("runs:task_evaluate", args=[vector_add.pk]), {"code": FAST})
    run = Run.objects.get()
    assert response.url == reverse("runs:detail", args=[run.pk]) and run.owner == user
    assert sent == [run.turns.get().pk]


def test_only_the_owner_can_add_a_manual_turn(client, vector_add, user, other_user):
    run = Run.objects.create(task=vector_add, owner=user, model="m", is_public=True)
    client.force_login(other_user)
    assert client.post(reverse("runs:manual", args=[run.pk]), {"code": FAST}).status_code == 404
    assert run.turns.count() == 0


def test_a_kernel_evaluated_on_its_own_run_is_timed_by_the_protocol_chosen(client, vector_add, user, monkeypatch):
    monkeypatch.setattr("apps.runs.dispatch.enqueue_manual_turn", lambda turn_id: None)
    client.force_login(user)
    html = client.get(reverse("runs:task_evaluate", args=[vector_add.pk])).content.decode()
    assert 'aria-describedby="id_timing_protocol_helptext"' in html and 'id="id_timing_protocol_helptext"' in html
    client.post(reverse("runs:task_evaluate", args=[vector_add.pk]), {"code": FAST, "timing_protocol": "queued"})
    client.post(reverse("runs:task_evaluate", args=[vector_add.pk]), {"code": FAST})  # left out: synchronized
    assert list(Run.objects.order_by("pk").values_list("timing_protocol", flat=True)) == ["queued", "synchronized"]


def test_an_unknown_timing_protocol_for_a_manual_kernel_is_a_field_error_and_stores_nothing(client, vector_add, user):
    client.force_login(user)
    response = client.post(reverse("runs:task_evaluate", args=[vector_add.pk]),
                           {"code": FAST, "timing_protocol": "instant"})
    assert response.status_code == 200 and "timing_protocol" in response.context["form"].errors
    assert "Select a valid choice" in response.content.decode() and not Run.objects.exists()


def test_a_turn_added_to_a_run_keeps_the_runs_protocol_and_offers_no_choice(client, vector_add, user):
    run = Run.objects.create(task=vector_add, owner=user, model="m", timing_protocol="queued")
    Turn.objects.create(run=run, round_index=0, kind="baseline", code=FAST)
    client.force_login(user)
    html = client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'data-editor="cuda"' in html and 'name="code"' in html  # the manual-turn editor is on the page
    assert 'name="timing_protocol"' not in html
