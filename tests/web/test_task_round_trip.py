"""A task exported from the admin as a zip and imported again comes back as the same task: same suite, same
row, byte-identical folder, and a second import changes nothing; the engine CLI still finds it by name."""

import io
import shutil
import zipfile
from pathlib import Path

import pytest

from apps.catalog.archive_import import MANIFEST, import_commit, import_stage_archive
from apps.catalog.models import Task
from apps.catalog.services import tasks_sync
from worker.cli import find_task

pytestmark = pytest.mark.django_db
SHIPPED = Path(__file__).resolve().parents[2] / "tasks"
CHANGELIST = "/admin/catalog/task/"
# One task of each format, as shipped: task.yaml (make), KernelBench (pytorch), C/CUDA (spec.toml).
FOLDERS = ("cudahercules-examples/vector_add_make", "kernelbench-examples/matmul_square", "mskernelbench/softmax")


@pytest.fixture
def tasks_dir(settings, tmp_path):
    root = tmp_path / "tasks"
    for rel in FOLDERS:
        shutil.copytree(SHIPPED / rel, root / rel)
    shutil.copytree(SHIPPED / "_harness", root / "_harness")
    settings.TASKS_DIR, settings.VAR_DIR = root, tmp_path / "var"
    tasks_sync(root)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def export(admin_client) -> bytes:
    selected = list(Task.objects.values_list("pk", flat=True))
    response = admin_client.post(CHANGELIST, {"action": "export_zip", "_selected_action": selected})
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    return b"".join(response.streaming_content) if response.streaming else response.content


def rows() -> list[tuple]:
    return sorted(Task.objects.values_list("pk", "suite", "operator", "precision", "source_hash"))


def test_an_exported_zip_re_imports_as_the_same_tasks_losslessly_and_idempotently(admin_client, tasks_dir):
    before, files = rows(), snapshot(tasks_dir)
    data = export(admin_client)
    assert MANIFEST in zipfile.ZipFile(io.BytesIO(data)).namelist()

    preview = import_stage_archive(io.BytesIO(data), "export.zip", len(data))
    assert sorted((i.target, i.action) for i in preview.items) == [(f, "unchanged") for f in sorted(FOLDERS)]
    assert preview.ignored == ()  # the manifest is read, not reported as a stray file
    import_commit(preview.token)
    assert rows() == before and snapshot(tasks_dir) == files  # same rows (same ids), same bytes, no new suite

    again = import_stage_archive(io.BytesIO(data), "export.zip", len(data))  # idempotent
    assert {i.action for i in again.items} == {"unchanged"}
    import_commit(again.token)
    assert rows() == before
    assert find_task("vector_add_make", tasks_dir).suite == "cudahercules-examples"  # not "ambiguous"


def test_the_round_trip_restores_deleted_tasks_into_their_own_suite(admin_client, tasks_dir):
    before, files = rows(), snapshot(tasks_dir)
    data = export(admin_client)
    for rel in FOLDERS:
        shutil.rmtree(tasks_dir / rel)
    Task.objects.all().delete()
    preview = import_stage_archive(io.BytesIO(data), "export.zip", len(data))
    assert sorted((i.target, i.action) for i in preview.items) == [(f, "new") for f in sorted(FOLDERS)]
    import_commit(preview.token)
    assert [r[1:] for r in rows()] == [r[1:] for r in before] and snapshot(tasks_dir) == files


def test_a_task_yaml_folder_without_the_manifest_is_still_filed_under_the_import_suite(tasks_dir):
    """An upload that is not an export (no manifest) keeps the documented behaviour for task.yaml folders."""
    buffer = io.BytesIO()
    folder = tasks_dir / "cudahercules-examples" / "vector_add_make"
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, f"my-tasks/vector_add_make/{path.name}")
    data = buffer.getvalue()
    preview = import_stage_archive(io.BytesIO(data), "mine.zip", len(data))
    assert [i.target for i in preview.items] == ["cudahercules/vector_add_make"]
