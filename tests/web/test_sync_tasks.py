from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.catalog.models import Task
from apps.catalog.services import tasks_sync
from tests.support.specs import VALID_SPEC, write_task

pytestmark = pytest.mark.django_db


def test_sync_creates_one_task_per_precision(tmp_path):
    write_task(tmp_path, "vadd")
    report = tasks_sync(tmp_path)
    assert sorted(report.created) == ["testsuite/vadd/bf16", "testsuite/vadd/fp32"]
    fp32 = Task.objects.get(operator="vadd", precision="fp32")
    assert fp32.entry_point == "vadd"
    assert [p["name"] for p in fp32.params] == ["A", "B", "C", "N"]
    assert fp32.sizes == [{"N": 1024}, {"N": 4096}]
    assert (fp32.atol, fp32.rtol) == (1e-4, 1e-4)  # defaults, the spec gives none for fp32
    assert Task.objects.get(operator="vadd", precision="bf16").tolerance_note == "one bf16 rounding"
    assert "add_kernel" in fp32.baseline_source


def test_sync_is_idempotent(tmp_path):
    write_task(tmp_path, "vadd")
    tasks_sync(tmp_path)
    before = list(Task.objects.values_list("pk", "updated_at"))
    report = tasks_sync(tmp_path)
    assert report.created == [] and report.updated == [] and len(report.unchanged) == 2
    assert list(Task.objects.values_list("pk", "updated_at")) == before


def test_sync_updates_a_changed_spec_and_keeps_the_admins_enabled_flag(tmp_path):
    folder = write_task(tmp_path, "vadd")
    tasks_sync(tmp_path)
    Task.objects.filter(precision="fp32").update(enabled=False)
    (folder / "spec.toml").write_text(VALID_SPEC.format(name="vadd").replace("Test vector add", "Renamed"))
    report = tasks_sync(tmp_path)
    assert sorted(report.updated) == ["testsuite/vadd/bf16", "testsuite/vadd/fp32"]
    task = Task.objects.get(precision="fp32")
    assert task.title == "Renamed" and task.enabled is False


@pytest.mark.parametrize(
    "mutate, field, message",
    [
        (lambda s: s.replace('category = "dense_linear_algebra"', 'category = "x"'), "category", "'x' is not one of"),
        (lambda s: s.replace('complexity = "N"', 'complexity = "M * N"'), "sizes[0]", "lacks M used by complexity"),
        (lambda s: s.replace('complexity = "N"', 'complexity = "__import__(1)"'), "complexity", "only"),
        (lambda s: s.replace('outputs = ["C"]', 'outputs = ["N"]'), "outputs", "'N' is not a pointer parameter"),
        (lambda s: s.replace("N = 4096", "N = -4"), "sizes[1].N", "must be a non-negative number"),
        (lambda s: s.replace('A = "uniform(-1, 1)"', 'A = "zipf(2)"'), "inputs.A", "unknown distribution"),
        (lambda s: s.replace("void vadd(", "int vadd("), "interface.fp32", "not a C declaration"),
        (lambda s: s.replace('name = "vadd"', 'name = "other"'), "name", "must equal the folder name"),
        (lambda s: s + "\n[[[broken", "toml", "is not valid TOML"),
        (lambda s: s.replace('title = "Test vector add"\n', ""), "title", "is required"),
    ],
)
def test_bad_spec_is_reported_with_file_and_reason(tmp_path, mutate, field, message):
    write_task(tmp_path, "vadd", spec=mutate(VALID_SPEC.format(name="vadd")))
    report = tasks_sync(tmp_path)
    assert len(report.errors) == 1
    error = report.errors[0]
    assert error.path.endswith("testsuite/vadd/spec.toml")
    assert error.field == field
    assert message in error.message


def test_a_bad_spec_does_not_stop_the_others_nor_touch_stored_rows(tmp_path):
    write_task(tmp_path, "good")
    bad = write_task(tmp_path, "vadd")
    tasks_sync(tmp_path)
    stored = Task.objects.get(operator="vadd", precision="fp32")
    (bad / "spec.toml").write_text("name = 'vadd'\n")  # now broken
    write_task(tmp_path, "newer")
    report = tasks_sync(tmp_path)
    assert [e.field for e in report.errors] == ["category"]
    assert sorted(report.created) == ["testsuite/newer/bf16", "testsuite/newer/fp32"]
    assert report.missing == []  # the broken one is reported as bad, not as gone
    kept = Task.objects.get(pk=stored.pk)
    assert (kept.title, kept.source_hash) == (stored.title, stored.source_hash)


def test_missing_baseline_source_is_reported(tmp_path):
    folder = write_task(tmp_path, "vadd")
    (folder / "vadd_bf16.cu").unlink()
    report = tasks_sync(tmp_path)
    assert report.errors[0].field == "interface.bf16"
    assert "vadd_bf16.cu is missing" in report.errors[0].message


def test_command_prints_bad_specs_and_keeps_going(tmp_path):
    write_task(tmp_path, "good")
    write_task(tmp_path, "vadd", spec="not toml at all [")
    out, err = StringIO(), StringIO()
    call_command("sync_tasks", dir=tmp_path, stdout=out, stderr=err)
    assert "2 created" in out.getvalue() and "1 bad specs" in out.getvalue()
    assert "testsuite/vadd/spec.toml: [toml]" in err.getvalue()
    with pytest.raises(CommandError, match="1 bad task spec"):
        call_command("sync_tasks", dir=tmp_path, strict=True, stdout=StringIO(), stderr=StringIO())


def test_command_refuses_a_missing_folder(tmp_path):
    with pytest.raises(CommandError, match="does not exist"):
        call_command("sync_tasks", dir=tmp_path / "nope")
