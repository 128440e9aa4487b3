"""Loading trajectories recorded on a GPU host (the committed demo data, measured on an H200)."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.catalog.services import tasks_sync
from apps.runs.models import Run, RunStatus

pytestmark = pytest.mark.django_db
DEMO = Path(settings.BASE_DIR) / "demo" / "trajectories" / "softmax_fp32_trajectory.json"


@pytest.fixture
def library(db):
    tasks_sync(settings.TASKS_DIR)


def test_import_recreates_turns_calls_profiles_and_events(library, admin_user):
    call_command("import_trajectory", str(DEMO), "--public", stdout=StringIO())
    run = Run.objects.get()
    assert (run.status, run.owner, run.is_public) == (RunStatus.SUCCEEDED, admin_user, True)
    assert run.worker_host == "imported"
    turns = list(run.turns.order_by("round_index", "debug_index"))
    assert [(t.round_index, t.debug_index, t.kind, t.verdict) for t in turns] == [
        (0, 0, "baseline", "ok"), (1, 0, "optimize", "compile_error"), (1, 1, "debug", "ok"),
        (2, 0, "optimize", "incorrect"), (2, 1, "debug", "incorrect"),
    ]
    assert run.best_turn == turns[2] and run.best_score == pytest.approx(turns[2].score) and run.best_score > 10
    assert "cudaDeviceSynchronise" in turns[1].compile_log  # the real nvcc error, verbatim
    assert turns[2].parent == turns[1] and turns[1].agent_calls.count() == 3
    assert turns[2].profiles.exists() and turns[0].profiles.exists()
    assert {p.gpu_name for p in turns[0].profiles.all()} == {"NVIDIA H200"}
    seqs = list(run.events.values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    assert run.events.last().type == "run.succeeded"


def test_importing_the_same_file_twice_is_refused_unless_forced(library, admin_user):
    call_command("import_trajectory", str(DEMO), stdout=StringIO())
    with pytest.raises(CommandError):
        call_command("import_trajectory", str(DEMO), stdout=StringIO(), stderr=StringIO())
    call_command("import_trajectory", str(DEMO), "--skip-existing", stdout=StringIO())
    assert Run.objects.count() == 1
    call_command("import_trajectory", str(DEMO), "--force", stdout=StringIO())
    assert Run.objects.count() == 2


def test_a_task_missing_from_the_database_is_reported_with_the_fix(admin_user):
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_trajectory", str(DEMO), stdout=StringIO(), stderr=err)
    assert "run `manage.py sync_tasks`" in err.getvalue()
    assert Run.objects.count() == 0


def test_a_broken_file_is_reported_and_nothing_is_stored(library, admin_user, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_trajectory", str(bad), stdout=StringIO(), stderr=err)
    assert "cannot read a trajectory" in err.getvalue() and Run.objects.count() == 0


def test_imported_run_page_renders(library, admin_user, client):
    call_command("import_trajectory", str(DEMO), stdout=StringIO())
    client.force_login(admin_user)
    response = client.get(reverse("runs:detail", args=[Run.objects.get().pk]))
    assert response.status_code == 200 and b"run.succeeded" in response.content


def test_an_imported_run_keeps_the_time_it_was_recorded(library, admin_user):
    call_command("import_trajectory", str(DEMO), stdout=StringIO())
    assert Run.objects.get().created_at.isoformat() == "2026-11-22T03:42:02+00:00"


def test_a_malformed_recorded_time_is_refused_and_nothing_is_stored(library, admin_user, tmp_path):
    data = json.loads(DEMO.read_text())
    data["created"] = "last tuesday"
    bad = tmp_path / "bad_created.json"
    bad.write_text(json.dumps(data))
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_trajectory", str(bad), stdout=StringIO(), stderr=err)
    assert "'created' must be an ISO 8601 date and time" in err.getvalue() and Run.objects.count() == 0
