"""A stand-in for a measuring binary of bench/ (tests without a GPU): a Python script that knows which run of it
this is (`k`, from 0) and records, per run, the CPUs it was allowed (`<exe>.cpus<k>`), then runs the lines given,
which print what the real binary prints."""

from __future__ import annotations

import sys
from pathlib import Path

_HEAD = """#!{python}
import os, sys
from pathlib import Path
count = Path(sys.argv[0] + ".count")
k = int(count.read_text()) if count.exists() else 0
count.write_text(str(k + 1))
Path(sys.argv[0] + f".cpus{{k}}").write_text(" ".join(map(str, sorted(os.sched_getaffinity(0)))))
"""


def stand_in(path: Path, body: str) -> Path:
    """An executable at `path` running `body` (Python, with `k` and `os` in scope) after the bookkeeping above."""
    path.write_text(_HEAD.format(python=sys.executable) + body)
    path.chmod(0o755)
    return path


def cpus_of_run(exe: Path, k: int) -> str:
    """The CPUs run `k` of the stand-in was allowed, space-separated."""
    return Path(f"{exe}.cpus{k}").read_text()
