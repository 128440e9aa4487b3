"""A missing or corrupt database gives one clear sentence, not a traceback (kernelweb/dberrors.py): in
manage.py commands and in pages (503). Real SQLite files, each in a subprocess with its own SQLITE_PATH."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import DatabaseError, OperationalError

from kernelweb.dberrors import explain

ROOT = Path(__file__).resolve().parents[2]
REQUEST = ("from django.test import Client; r = Client().get({path!r}, HTTP_ACCEPT={accept!r}); "
           "print('STATUS', r.status_code); print(r.content.decode())")


def _manage(db: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "KERNELWEB_ENV")}
    env.update(SQLITE_PATH=str(db), KERNELWEB_VAR_DIR=str(tmp_path / "var"))
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def _request(db: Path, tmp_path: Path, path: str, accept: str = "text/html") -> tuple[int, str]:
    result = _manage(db, tmp_path, "shell", "-c", REQUEST.format(path=path, accept=accept))
    assert result.returncode == 0, result.stderr
    status, _, body = result.stdout.split("STATUS ", 1)[1].partition("\n")
    return int(status), body


def test_a_database_without_tables_says_to_migrate(tmp_path):
    db = tmp_path / "new.sqlite3"  # SQLite creates an empty file on first connection
    result = _manage(db, tmp_path, "createsuperuser", "--noinput", "--username", "a", "--email", "a@example.org")
    assert result.returncode == 1
    assert "error: the database has no tables (missing: auth_user): run `python manage.py migrate`" in result.stderr
    assert "Traceback" not in result.stderr

    status, body = _request(db, tmp_path, "/")  # the home page counts the tasks
    assert status == 503 and "Traceback" not in body
    assert "the database has no tables" in body and "<code>python manage.py migrate</code>" in body
    status, body = _request(db, tmp_path, "/", accept="application/json")
    assert status == 503 and '"detail": "database not ready: the database has no tables' in body


def test_a_file_that_is_not_a_sqlite_database_is_named(tmp_path):
    db = tmp_path / "kernelweb.sqlite3"
    db.write_bytes(b"this is a text file, not SQLite\n" * 200)
    result = _manage(db, tmp_path, "migrate", "--noinput")
    assert result.returncode == 1
    assert f"error: the database file {db} is not a SQLite database" in result.stderr
    assert "Traceback" not in result.stderr

    status, body = _request(db, tmp_path, "/")
    assert status == 503 and f"the database file {db} is not a SQLite database" in body and "Traceback" not in body


def test_a_migrated_database_works(tmp_path):
    db = tmp_path / "ok.sqlite3"
    assert _manage(db, tmp_path, "migrate", "--noinput").returncode == 0
    status, body = _request(db, tmp_path, "/")
    assert status == 200 and "KernelWeb" in body


@pytest.mark.parametrize("error, expected", [
    (OperationalError("no such table: runs_run"), "no tables (missing: runs_run)"),
    (DatabaseError('relation "runs_run" does not exist'), "no tables (missing: runs_run)"),
    (OperationalError("no such column: runs_run.queue"), "older than the code (missing column runs_run.queue)"),
    (DatabaseError("file is not a database"), "is not a SQLite database"),
    (OperationalError("database disk image is malformed"), "is corrupt"),
    (OperationalError("unable to open database file"), "cannot be opened"),
])
def test_known_errors_are_explained(error, expected):
    assert expected in explain(error)


def test_other_errors_are_left_alone():
    assert explain(OperationalError("database is locked")) is None
    assert explain(ValueError("no such table: x")) is None
