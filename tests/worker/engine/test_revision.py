"""A task's revision: one hash of everything in its folder."""

from worker.engine.revision import short_revision, task_revision


def _folder(tmp_path, files):
    for name, data in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return tmp_path


def test_the_revision_depends_on_every_file_and_its_place(tmp_path):
    a = _folder(tmp_path / "a", {"spec.toml": b"x", "src/k.cu": b"y"})
    b = _folder(tmp_path / "b", {"src/k.cu": b"y", "spec.toml": b"x"})
    assert task_revision(a) == task_revision(b) and len(task_revision(a)) == 64
    (b / "src" / "k.cu").write_bytes(b"z")
    assert task_revision(a) != task_revision(b)
    c = _folder(tmp_path / "c", {"spec.toml": b"x", "k.cu": b"y"})  # same bytes, another path
    assert task_revision(a) != task_revision(c)
    (a / "README.md").write_text("notes")  # any file counts, not only the spec and sources
    assert task_revision(a) != task_revision(_folder(tmp_path / "d", {"spec.toml": b"x", "src/k.cu": b"y"}))


def test_python_caches_are_not_part_of_the_task(tmp_path):
    folder = _folder(tmp_path, {"spec.toml": b"x", "model.py": b"class Model: ..."})
    before = task_revision(folder)
    _folder(tmp_path, {"__pycache__/model.cpython-312.pyc": b"\0"})
    assert task_revision(folder) == before and short_revision(before) == before[:12]
