"""Task curation in the admin: filters and actions, import (preview, confirm, refusals), export, validation."""

import io
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from django.conf import settings

from apps.catalog.archive_import import (
    ImportLimits,
    ImportRejected,
    import_commit,
    import_stage_archive,
    import_stage_directory,
)
from apps.catalog.models import Task
from apps.catalog.services import tasks_sync
from tests.support.specs import VALID_SPEC, write_task

pytestmark = pytest.mark.django_db
IMPORT_URL = "/admin/catalog/task/import/"
CHANGELIST = "/admin/catalog/task/"


@pytest.fixture
def dirs(settings, tmp_path):
    settings.TASKS_DIR = tmp_path / "tasks"
    settings.VAR_DIR = tmp_path / "var"
    settings.TASKS_DIR.mkdir()
    return settings.TASKS_DIR


def files_of(folder: Path, prefix: str) -> dict[str, bytes]:
    return {f"{prefix}/{p.relative_to(folder).as_posix()}": p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def task_files(tmp_path: Path, name: str = "vadd", prefix: str | None = None, spec: str | None = None) -> dict:
    source = write_task(tmp_path / "src", name, spec=spec)
    return files_of(source, prefix if prefix is not None else f"testsuite/{name}")


def zip_of(files: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def tar_of(files: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            archive.addfile(info)
    return buffer.getvalue()


def upload(admin_client, data: bytes, name: str = "tasks.zip"):
    archive = io.BytesIO(data)
    archive.name = name
    return admin_client.post(IMPORT_URL, {"step": "preview", "archive": archive})


def token_of(response) -> str:
    return response.context["preview"].token


def test_changelist_has_filters_search_and_an_import_link(admin_client, task):
    html = admin_client.get(CHANGELIST).content.decode()
    assert f'href="{IMPORT_URL}"' in html and "Import tasks" in html
    for title in ("suite", "category", "precision", "enabled"):
        assert f"By {title}" in html, title
    assert 'name="q"' in html
    assert "vadd" in admin_client.get(CHANGELIST, {"q": "vadd"}).content.decode()
    assert "0 tasks" in admin_client.get(CHANGELIST, {"q": "nomatch"}).content.decode()


def test_bulk_actions_enable_and_disable(admin_client, task):
    admin_client.post(CHANGELIST, {"action": "disable", "_selected_action": [task.pk]})
    task.refresh_from_db()
    assert task.enabled is False
    admin_client.post(CHANGELIST, {"action": "enable", "_selected_action": [task.pk]})
    task.refresh_from_db()
    assert task.enabled is True


def test_import_previews_first_and_writes_only_on_confirm(admin_client, dirs, tmp_path):
    response = upload(admin_client, zip_of(task_files(tmp_path)))
    html = response.content.decode()
    assert response.status_code == 200 and "Nothing has been written yet" in html
    assert "<code>testsuite/vadd</code>" in html and "fp32, bf16" in html and "<td>new</td>" in html
    assert not (dirs / "testsuite").exists() and Task.objects.count() == 0

    response = admin_client.post(IMPORT_URL, {"step": "confirm", "token": token_of(response)}, follow=True)
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == CHANGELIST
    assert "Imported 1 task folder(s)" in html and "2 task(s) created" in html
    assert sorted(p.name for p in (dirs / "testsuite" / "vadd").iterdir()) == [
        "harness.cu", "spec.toml", "vadd.cu", "vadd_bf16.cu"]
    fp32 = Task.objects.get(operator="vadd", precision="fp32")
    assert fp32.spec_path == "testsuite/vadd/spec.toml" and "add_kernel" in fp32.baseline_source
    assert not list((Path(settings.VAR_DIR) / "task-imports").iterdir())  # staging cleaned up


def test_a_tar_gz_of_operator_folders_lands_under_the_specs_suite(admin_client, dirs, tmp_path):
    response = upload(admin_client, tar_of(task_files(tmp_path, prefix="vadd")), "tasks.tar.gz")
    assert "<code>testsuite/vadd</code>" in response.content.decode()
    admin_client.post(IMPORT_URL, {"step": "confirm", "token": token_of(response)})
    assert (dirs / "testsuite" / "vadd" / "spec.toml").is_file()
    assert Task.objects.filter(suite="testsuite", operator="vadd").count() == 2


def test_importing_an_existing_task_updates_it_and_keeps_its_enabled_flag(admin_client, dirs, tmp_path):
    write_task(dirs, "vadd")
    tasks_sync(dirs)
    Task.objects.filter(precision="fp32").update(enabled=False)
    renamed = VALID_SPEC.format(name="vadd").replace("Test vector add", "Renamed add")
    response = upload(admin_client, zip_of(task_files(tmp_path, spec=renamed)))
    assert "<td>update</td>" in response.content.decode()
    admin_client.post(IMPORT_URL, {"step": "confirm", "token": token_of(response)})
    fp32 = Task.objects.get(precision="fp32")
    assert fp32.title == "Renamed add" and fp32.enabled is False
    assert "Renamed add" in (dirs / "testsuite" / "vadd" / "spec.toml").read_text()


def test_a_broken_spec_is_reported_in_the_preview_and_never_written(admin_client, dirs, tmp_path):
    broken = VALID_SPEC.format(name="bad").replace('category = "dense_linear_algebra"', 'category = "x"')
    files = {**task_files(tmp_path), **task_files(tmp_path, "bad", spec=broken),
             "testsuite/nospec/readme.txt": b"no spec here"}
    files.pop("testsuite/vadd/harness.cu")
    files.update(task_files(tmp_path, "good"))
    response = upload(admin_client, zip_of(files))
    html = response.content.decode()
    assert "[category] &#x27;x&#x27; is not one of" in html
    assert "[harness] harness.cu is missing" in html
    assert "testsuite/nospec/readme.txt" in html  # ignored, and said so
    assert "Import 1 task folder (skip the 2 with errors)" in html
    admin_client.post(IMPORT_URL, {"step": "confirm", "token": token_of(response)})
    assert sorted(p.name for p in (dirs / "testsuite").iterdir()) == ["good"]
    assert set(Task.objects.values_list("operator", flat=True)) == {"good"}


def test_an_archive_without_a_valid_task_offers_no_confirm(admin_client, dirs, tmp_path):
    broken = VALID_SPEC.format(name="bad") + "\n[[[broken"
    html = upload(admin_client, zip_of(task_files(tmp_path, "bad", spec=broken))).content.decode()
    assert "is not valid TOML" in html and 'value="confirm"' not in html


@pytest.mark.parametrize(
    "archive, message",
    [
        (lambda f: zip_of({**f, "../evil.txt": b"x"}), "&#x27;..&#x27; in a path"),
        (lambda f: zip_of({**f, "testsuite/vadd/../../../evil.cu": b"x"}), "&#x27;..&#x27; in a path"),
        (lambda f: tar_of({**f, "../../evil.txt": b"x"}), "&#x27;..&#x27; in a path"),
        (lambda f: zip_of({**f, "/etc/evil": b"x"}), "absolute paths are not accepted"),
        (lambda f: tar_of({**f, "/tmp/evil": b"x"}), "absolute paths are not accepted"),
        (lambda f: zip_of({**f, "C:\\evil": b"x"}), "backslashes"),
        (lambda f: zip_of(f, symlinks={"testsuite/vadd/link.cu": "/etc/passwd"}), "symbolic links are not accepted"),
        (lambda f: tar_of(f, symlinks={"testsuite/vadd/link.cu": "/etc/passwd"}), "links are not accepted"),
        (lambda f: b"this is not an archive", "not a .zip, .tar.gz or .tar archive"),
    ],
)
def test_unsafe_archives_are_refused_whole_and_nothing_is_written(admin_client, dirs, tmp_path, archive, message):
    response = upload(admin_client, archive(task_files(tmp_path)))
    html = response.content.decode()
    assert response.status_code == 200 and "Refused:" in html and message in html
    assert "Nothing was written" in html
    assert list(dirs.iterdir()) == [] and Task.objects.count() == 0
    assert not (tmp_path / "evil.txt").exists() and not Path("/tmp/evil").exists()
    staging = Path(settings.VAR_DIR) / "task-imports"
    assert not staging.exists() or list(staging.iterdir()) == []


def test_a_zip_member_name_with_a_nul_byte_is_refused_naming_the_member_not_truncated(admin_client, dirs, tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in task_files(tmp_path).items():
            archive.writestr(name, data)
        info = zipfile.ZipInfo("testsuite/vadd/kernel.cu")
        info.filename = "testsuite/vadd/kernel.cu\x00.txt"  # ZipInfo() itself would cut it; a hostile archiver does not
        archive.writestr(info, b"__global__ void k() {}\n")
    data = buffer.getvalue()
    assert b"kernel.cu\x00.txt" in data  # the NUL really is in the archive
    with pytest.raises(ImportRejected, match=r"testsuite/vadd/kernel\.cu\\x00\.txt'?: a NUL byte in a member name"):
        import_stage_archive(io.BytesIO(data), "nul.zip", len(data))
    response = upload(admin_client, data)
    html = response.content.decode()
    assert "Refused:" in html and "a NUL byte in a member name" in html and "kernel.cu\\x00.txt" in html
    assert list(dirs.iterdir()) == [] and Task.objects.count() == 0
    staging = Path(settings.VAR_DIR) / "task-imports"
    assert not staging.exists() or list(staging.iterdir()) == []


def test_an_oversized_upload_is_refused_before_unpacking(admin_client, dirs):
    response = upload(admin_client, b"\0" * (20 * 1024 * 1024 + 1))
    assert "the limit is 20 MiB per archive" in response.content.decode()
    assert Task.objects.count() == 0


def test_too_many_files_or_too_many_unpacked_bytes_are_refused(dirs, tmp_path):
    files = task_files(tmp_path)
    with pytest.raises(ImportRejected, match="more than 3 files"):
        data = zip_of(files)
        import_stage_archive(io.BytesIO(data), "a.zip", len(data), ImportLimits(files=3))
    bomb = zip_of({**files, "testsuite/vadd/zeros.bin": b"\0" * 2_000_000})  # ~2 KiB compressed
    assert len(bomb) < 20_000
    with pytest.raises(ImportRejected, match="unpacks to more than 1 MiB"):
        import_stage_archive(io.BytesIO(bomb), "bomb.zip", len(bomb), ImportLimits(total_bytes=1024 * 1024))
    assert list((Path(settings.VAR_DIR) / "task-imports").iterdir()) == []


def test_a_confirm_needs_the_token_of_this_session(admin_client, client, admin_user, dirs, tmp_path):
    response = upload(admin_client, zip_of(task_files(tmp_path)))
    token = token_of(response)
    from django.contrib.auth import get_user_model

    other_admin = get_user_model().objects.create_superuser("root2", "r@example.com", "pw-root-234")
    client.force_login(other_admin)
    refused = client.post(IMPORT_URL, {"step": "confirm", "token": token}, follow=True)
    assert "unknown or has expired" in refused.content.decode()
    assert Task.objects.count() == 0
    admin_client.post(IMPORT_URL, {"step": "cancel", "token": token})
    assert Task.objects.count() == 0 and list(dirs.iterdir()) == []
    again = admin_client.post(IMPORT_URL, {"step": "confirm", "token": token}, follow=True)
    assert "unknown or has expired" in again.content.decode()


def test_a_server_folder_under_tasks_dir_can_be_imported_but_nothing_outside(admin_client, dirs, tmp_path):
    write_task(dirs / "incoming", "vadd")  # TASKS_DIR/incoming/testsuite/vadd
    response = admin_client.post(IMPORT_URL, {"step": "preview", "directory": "incoming"})
    assert "<code>testsuite/vadd</code>" in response.content.decode()
    admin_client.post(IMPORT_URL, {"step": "confirm", "token": token_of(response)})
    assert (dirs / "testsuite" / "vadd" / "spec.toml").is_file() and Task.objects.count() == 2
    (tmp_path / "outside").mkdir()
    for path in ("../outside", str(tmp_path / "outside"), "incoming/../../outside"):
        html = admin_client.post(IMPORT_URL, {"step": "preview", "directory": path}).content.decode()
        assert "is outside the task folder" in html, path
    with pytest.raises(ImportRejected, match="symbolic links"):
        (dirs / "incoming" / "testsuite" / "vadd" / "link.cu").symlink_to("/etc/passwd")
        import_stage_directory("incoming")


def test_the_import_form_wants_exactly_one_source(admin_client, dirs):
    html = admin_client.post(IMPORT_URL, {"step": "preview"}).content.decode()
    assert "Give either an archive or a folder" in html


def test_export_writes_the_task_folders_and_re_imports_unchanged(admin_client, dirs, tmp_path):
    write_task(dirs, "vadd")
    write_task(dirs, "vmul")
    tasks_sync(dirs)
    selected = list(Task.objects.filter(operator="vadd").values_list("pk", flat=True))  # both precisions
    response = admin_client.post(CHANGELIST, {"action": "export_zip", "_selected_action": selected})
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].startswith('attachment; filename="kernelweb-tasks-')
    data = b"".join(response.streaming_content) if response.streaming else response.content
    names = sorted(zipfile.ZipFile(io.BytesIO(data)).namelist())
    assert names == ["kernelweb-tasks.json", "testsuite/vadd/harness.cu", "testsuite/vadd/spec.toml",
                     "testsuite/vadd/vadd.cu", "testsuite/vadd/vadd_bf16.cu"]

    preview = import_stage_archive(io.BytesIO(data), "export.zip", len(data))
    assert [(i.target, i.action) for i in preview.items] == [("testsuite/vadd", "unchanged")]

    original = files_of(dirs / "testsuite" / "vadd", "x")
    shutil.rmtree(dirs / "testsuite")
    Task.objects.all().delete()
    result = import_commit(preview.token)
    assert result.written == ("testsuite/vadd",) and sorted(result.report.created) == [
        "testsuite/vadd/bf16", "testsuite/vadd/fp32"]
    assert files_of(dirs / "testsuite" / "vadd", "x") == original


def test_validate_action_queues_one_gpu_task_per_selected_task_after_commit(
    admin_client, task, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("apps.catalog.tasks.validate_task_baseline.delay", lambda task_id: sent.append(task_id))
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(CHANGELIST, {"action": "validate_baseline", "_selected_action": [task.pk]},
                                     follow=True)
    assert sent == [task.pk] and "1 baseline validation(s) queued" in response.content.decode()
    task.refresh_from_db()
    assert task.validation_verdict == "queued"


def test_the_validation_task_is_routed_to_the_gpu_queue(monkeypatch, settings):
    from celery import Task as CeleryTask

    from apps.catalog.tasks import validate_task_baseline

    settings.KERNELWEB_GPU_QUEUE = "gpu.h100"
    sent = []
    monkeypatch.setattr(CeleryTask, "apply_async", lambda self, args=None, kwargs=None, **options: sent.append(
        (self.name, args, options.get("queue"))))
    validate_task_baseline.delay(7)
    validate_task_baseline.apply_async((8,), queue="elsewhere")
    assert sent == [("catalog.validate_task_baseline", (7,), "gpu.h100"),
                    ("catalog.validate_task_baseline", (8,), "elsewhere")]


def test_validation_of_a_task_without_a_readable_spec_stores_the_reason(task):
    from apps.catalog.tasks import validate_task_baseline

    validate_task_baseline(task.pk)  # the fixture task was never synced from a folder
    task.refresh_from_db()
    assert task.validation_verdict == "spec_error" and "no spec file" in task.validation_detail
    assert task.validated_at is not None


@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                    reason="nvcc is not installed")
def test_validation_runs_the_real_baseline_check_and_stores_the_verdict():
    from apps.catalog.tasks import validate_task_baseline
    from worker.engine import toolchain
    tasks_sync(settings.TASKS_DIR)
    task = Task.objects.get(operator="vector_add", precision="fp32")
    validate_task_baseline(task.pk)
    task.refresh_from_db()
    assert task.validated_at is not None
    if toolchain.detect().gpu is None:
        assert task.validation_verdict == "no_gpu"
        assert "needs a GPU and none is present" in task.validation_detail
    else:
        assert task.validation_verdict == "ok", task.validation_detail
        assert "sizes match the CPU reference" in task.validation_detail
