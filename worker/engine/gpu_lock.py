"""One GPU user at a time: an flock on a file named after the GPU (docs/evaluation.md, GPU lock); and one
interleaved pair per CPU (`cpu_claim`).

Every harness run (check, time, profile, memcheck) holds it, since any work
on the GPU disturbs a timing in progress; compiles and LLM calls never do.
The lock is per GPU UUID (or index), so workers pinned to different GPUs of
one host do not wait for each other. The kernel releases an flock when its
holder dies, so a crashed worker cannot wedge the GPU.

With KW_GPU_LOCK_LOG set to a file, every hold is appended to it on release as one JSON line
{"key", "pid", "start", "end"} (wall-clock seconds): bench/multi_gpu.py reads it to show that no two
timings ever overlapped on one GPU.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


class GpuLockTimeout(TimeoutError):
    pass


def default_lock_dir() -> Path:
    # Workers of different OS users sharing a GPU must point KW_LOCK_DIR at one shared folder.
    return Path(os.environ.get("KW_LOCK_DIR") or Path.home() / ".cache" / "kernelweb" / "locks")


@contextmanager
def gpu_lock(
    key: str, lock_dir: Path | str | None = None, timeout_s: float = 3600.0, poll_s: float = 0.2
) -> Iterator[float]:
    """Hold the lock for GPU `key`; yields the seconds spent waiting. Raises GpuLockTimeout."""
    folder = Path(lock_dir) if lock_dir else default_lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"gpu-{key}.lock"
    start = time.monotonic()
    with open(path, "a+") as fh:
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - start > timeout_s:
                    raise GpuLockTimeout(f"waited {timeout_s:.0f} s for {path}") from None
                time.sleep(poll_s)
        waited = time.monotonic() - start
        held_from = time.time()
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")  # who holds it, for a human looking at a stuck GPU
            fh.flush()
            yield waited
        finally:
            _log_hold(key, held_from, time.time())  # before the release: a hold is logged while it is still exclusive
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _log_hold(key: str, start: float, end: float) -> None:
    path = os.environ.get("KW_GPU_LOCK_LOG")
    if not path:
        return
    line = json.dumps({"key": key, "pid": os.getpid(), "start": start, "end": end}) + "\n"
    try:
        with open(path, "a", encoding="utf-8") as log:  # O_APPEND: concurrent writers never interleave a line
            log.write(line)
    except OSError:
        pass  # a diagnostics file must never fail a GPU job


@contextmanager
def cpu_claim(candidates: Iterable[int], lock_dir: Path | str | None = None) -> Iterator[int | None]:
    """The first CPU of `candidates` that no other holder has claimed, held until the block ends (an flock on
    `cpu-<n>.lock` beside the GPU locks); None when every one is held. The pairs of timed processes of workers on
    several GPUs of one host each take turns on one CPU (harness.run_interleaved): two pairs on one CPU would run at
    the same time and slow each other's host work."""
    folder = Path(lock_dir) if lock_dir else default_lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for cpu in candidates:
        fh = open(folder / f"cpu-{cpu}.lock", "a+")  # held open for the whole block when claimed
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            continue
        try:
            yield cpu
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            fh.close()
        return
    yield None
