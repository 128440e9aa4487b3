"""A task's revision: one content hash of its whole folder (spec, sources, data, everything in it).

A run records the revision it was launched with; the worker recomputes it on the folder it loads, so
a run never evaluates a task that changed under it. Django-free.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

SHORT = 12  # characters shown where a revision is displayed
_SKIPPED_DIRS = {"__pycache__"}  # written by Python when a task's model file is imported; not the task
_SKIPPED_SUFFIXES = {".pyc"}


def _files(folder: Path) -> list[tuple[str, Path]]:
    found = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder)
        if any(part in _SKIPPED_DIRS for part in relative.parts) or path.suffix in _SKIPPED_SUFFIXES:
            continue
        if path.is_file():
            found.append((relative.as_posix(), path))
    return sorted(found)


def task_revision(folder: Path | str) -> str:
    """sha256 over every file of the folder: its relative path (sorted, '/'-separated) and its bytes."""
    digest = hashlib.sha256()
    for relative, path in _files(Path(folder)):
        data = path.read_bytes()
        digest.update(relative.encode())
        digest.update(b"\0")
        digest.update(str(len(data)).encode())
        digest.update(b"\0")
        digest.update(data)
    return digest.hexdigest()


def short_revision(revision: str) -> str:
    return revision[:SHORT]
