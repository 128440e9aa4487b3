"""Run an untrusted (or merely fallible) child process, contained (docs/architecture.md, Security model).

- argv only, never a shell;
- its own session and process group, so a timeout kills the whole tree; and killed by the kernel when the
  process that started it dies;
- cwd is a scratch directory, HOME and TMPDIR point into it;
- environment scrubbed to an allowlist: no API keys, no DATABASE_URL, no REDIS_URL;
- stdout/stderr go to files; only a capped head+tail is read back;
- resource limits (core, CPU time, file size, optionally process count);
- with a `policy`, confinement (worker.engine.confine: no_new_privs, Landlock, seccomp) applied before
  the real program starts, so even its static constructors run confined. The trampoline reports what it
  put in force over a pipe it closes before execve (the program cannot write a report of its own), and
  refuses to start the program unconfined unless the operator allows it (KW_ALLOW_UNCONFINED).

Limits are applied by a tiny Python trampoline that calls setrlimit and then
execs the real program, instead of `preexec_fn`: the build compiles objects
from several threads, and CPython documents `preexec_fn` as unsafe when the
parent has threads (the forked child can deadlock on a lock held at fork).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.engine import confine

ENV_ALLOWLIST = (
    "PATH",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_HOME",
    "CUDA_PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
)
_MiB = 1024 * 1024

# Runs in the child: apply limits, then replace itself with the real program.
_TRAMPOLINE = """
import ctypes, os, resource, sys, json
options = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
# Killed when the process that started it dies (PR_SET_PDEATHSIG, kept across exec): in a session of its own, a
# candidate would otherwise run on after a killed worker, on a GPU whose lock died with the worker.
if libc.prctl(1, 9, 0, 0, 0) != 0 or os.getppid() != options["parent"]:
    os._exit(125)  # no such guarantee, or the parent is already gone
if options.get("isolate_network"):
    # A network namespace of its own with only a loopback (up, so local IPC between a profiler and its
    # target still works): the candidate reaches neither the host's services nor the outside.
    import fcntl, socket, struct
    if libc.unshare(0x40000000) == 0:  # CLONE_NEWNET
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # SIOCSIFFLAGS lo: UP LOOPBACK RUNNING
                fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", 0x1 | 0x8 | 0x40))
        except OSError as exc:
            sys.stderr.write(f"sandbox: loopback stays down in the network namespace: {exc}\\n")
    else:
        sys.stderr.write("sandbox: no network namespace here (" + os.strerror(ctypes.get_errno())
                         + "): the network stays reachable\\n")
if options.get("cpus"):
    os.sched_setaffinity(0, options["cpus"])  # kept across exec; both sides of an interleaved pair on one CPU
for name, value in options["rlimits"].items():
    if value is None:
        continue
    kind = getattr(resource, name)
    hard_now = resource.getrlimit(kind)[1]
    soft, hard = value, (value + 5 if name == "RLIMIT_CPU" else value)  # SIGXCPU first, then SIGKILL
    if hard_now != resource.RLIM_INFINITY:
        soft, hard = min(soft, hard_now), min(hard, hard_now)
    try:
        resource.setrlimit(kind, (soft, hard))
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"sandbox: cannot set {name}: {exc}\\n")
if options.get("confine"):
    # worker.engine.confine, loaded by path: the trampoline runs isolated (-I -S), without the worker's path.
    import importlib.util
    spec = importlib.util.spec_from_file_location("kw_confine", options["confine_module"])
    confine = importlib.util.module_from_spec(spec)
    sys.modules["kw_confine"] = confine
    spec.loader.exec_module(confine)
    report = confine.apply(confine.Policy.from_dict(options["confine"]))
    refused = not report["enforced"] and not options["allow_unconfined"]
    report["refused"] = refused
    os.write(options["status_fd"], confine.report_json(report).encode())
    os.close(options["status_fd"])
    if refused:
        sys.stderr.write("sandbox: refusing to run unconfined (" + "; ".join(report["problems"])
                         + "): set KW_ALLOW_UNCONFINED=1 to allow it\\n")
        os._exit(126)
argv = sys.argv[2:]
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    sys.stderr.write(f"sandbox: cannot execute {argv[0]!r}: {exc}\\n")
    os._exit(127)
"""


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int | None = None  # RLIMIT_CPU; None: derived from the wall timeout
    file_bytes: int | None = 2048 * _MiB  # RLIMIT_FSIZE: no single file above this
    processes: int | None = None  # RLIMIT_NPROC counts all processes *and threads* of the user, so only
    #                               a loose cap makes sense; None leaves it alone.
    core_bytes: int = 0  # RLIMIT_CORE: no core dumps of untrusted code
    isolate_network: bool = False  # a network namespace with only its own loopback (where the kernel allows)
    # No RLIMIT_AS on purpose: the CUDA driver reserves huge virtual address ranges (unified
    # addressing), and any address-space cap low enough to matter makes cuInit fail.


@dataclass(frozen=True)
class Confinement:
    """What the trampoline put in force before the program started (worker.engine.confine.apply)."""

    policy: str
    enforced: bool  # no_new_privs, Landlock and seccomp all in force
    refused: bool  # not enforced and not allowed: the program never started
    landlock_abi: int = 0
    landlock: bool = False
    seccomp: bool = False
    problems: tuple[str, ...] = ()

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> Confinement:
        return cls(str(report.get("policy", "")), bool(report.get("enforced")), bool(report.get("refused")),
                   int(report.get("landlock_abi") or 0), bool(report.get("landlock")), bool(report.get("seccomp")),
                   tuple(map(str, report.get("problems") or ())))


@dataclass(frozen=True)
class SandboxResult:
    argv: tuple[str, ...]
    returncode: int | None  # None only if the process could not be started
    signal: int | None  # the signal that ended it, if any
    timed_out: bool
    wall_s: float
    stdout: str  # capped (head + tail) text of the stdout file
    stderr: str
    stdout_path: str
    stderr_path: str
    cwd: str
    confinement: Confinement | None = None  # None: no policy was asked for, or the trampoline never reported

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def output(self) -> str:
        """stdout then stderr, as a compiler log is usually read."""
        return self.stdout + (
            ("\n" if self.stdout and not self.stdout.endswith("\n") else "") + self.stderr
            if self.stderr
            else ""
        )


def scrubbed_env(scratch: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    tmp = scratch / ".tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(scratch)
    env["TMPDIR"] = str(tmp)
    # A user name without /etc/passwd, which the confinement does not grant: getpass.getuser() reads these first
    # (torch.compile names its caches with it and failed with "getpwuid(): uid not found" on a GPU host).
    env["USER"] = env["LOGNAME"] = "kernelweb"
    env.update(extra or {})
    return env


def read_capped(path: Path, cap: int) -> str:
    """The file's text if it fits in cap bytes, else its head and tail with a marker between."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            if size <= cap:
                data = fh.read()
                return data.decode("utf-8", errors="replace")
            head = fh.read(cap // 2)
            fh.seek(size - cap // 2)
            tail = fh.read()
    except FileNotFoundError:
        return ""
    skipped = size - len(head) - len(tail)
    return (
        head.decode("utf-8", errors="replace")
        + f"\n[... {skipped} bytes not shown ...]\n"
        + tail.decode("utf-8", errors="replace")
    )


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(
    argv: list[str] | tuple[str, ...],
    cwd: Path | str,
    timeout_s: float,
    *,
    env_extra: dict[str, str] | None = None,
    limits: Limits = Limits(),
    name: str = "run",
    output_cap: int = 256 * 1024,
    grace_s: float = 2.0,
    policy: confine.Policy | None = None,
    pass_fds: tuple[int, ...] = (),
    cpus: tuple[int, ...] = (),
) -> SandboxResult:
    """Run argv in cwd with a wall-clock timeout; the result is returned, never raised.

    On timeout the process group gets SIGTERM, then SIGKILL after grace_s. When the
    main process ends, anything left in its group (e.g. a background grandchild) is
    killed too. A child that calls setsid() itself escapes the group; containing that
    needs cgroups, which this module does not require.

    `pass_fds` are handed over: the child gets them under the same numbers, and they are closed here
    once it has started (so a pipe between two children sees its end when one of them exits). `cpus`, when
    given, are the only CPUs the child (and all it starts) may run on.
    """
    cwd = Path(cwd)
    cwd.mkdir(parents=True, exist_ok=True)
    out_path, err_path = cwd / f"{name}.stdout", cwd / f"{name}.stderr"
    rlimits = {
        "RLIMIT_CORE": limits.core_bytes,
        "RLIMIT_CPU": limits.cpu_seconds if limits.cpu_seconds is not None else int(timeout_s * 2) + 10,
        "RLIMIT_FSIZE": limits.file_bytes,
        "RLIMIT_NPROC": limits.processes,
    }
    status_r = status_w = -1
    opts: dict[str, Any] = {"rlimits": rlimits, "isolate_network": limits.isolate_network, "parent": os.getpid(),
                            "cpus": list(cpus)}
    if policy is not None:
        status_r, status_w = os.pipe()
        opts.update(confine=policy.to_dict(), confine_module=confine.__file__, status_fd=status_w,
                    allow_unconfined=confine.unconfined_allowed())
    options = json.dumps(opts)
    full = [sys.executable, "-I", "-S", "-c", _TRAMPOLINE, options, *[str(a) for a in argv]]
    start = time.monotonic()
    timed_out = False
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                full,
                cwd=cwd,
                env=scrubbed_env(cwd, env_extra),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                close_fds=True,
                pass_fds=((status_w,) if policy is not None else ()) + tuple(pass_fds),
            )
        except OSError as exc:
            _close(status_r, status_w, *pass_fds)
            err.write(f"sandbox: cannot start {argv[0]!r}: {exc}\n".encode())
            err.flush()
            return SandboxResult(
                tuple(map(str, argv)),
                None,
                None,
                False,
                0.0,
                "",
                read_capped(err_path, output_cap),
                str(out_path),
                str(err_path),
                str(cwd),
            )
        _close(status_w, *pass_fds)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid, signal.SIGKILL)
                proc.wait()
        # The session leader's pid is the group id; sweep whatever it left behind.
        _kill_group(proc.pid, signal.SIGKILL)
    wall = time.monotonic() - start
    rc = proc.returncode
    confinement = _read_report(status_r) if policy is not None else None
    return SandboxResult(
        argv=tuple(map(str, argv)),
        returncode=rc,
        signal=-rc if rc is not None and rc < 0 else None,
        timed_out=timed_out,
        wall_s=wall,
        stdout=read_capped(out_path, output_cap),
        stderr=read_capped(err_path, output_cap),
        stdout_path=str(out_path),
        stderr_path=str(err_path),
        cwd=str(cwd),
        confinement=confinement,
    )


def _close(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass


def _read_report(fd: int) -> Confinement | None:
    """The trampoline's report: it closed its end before execve and the process has ended, so this never
    blocks; nothing the program did can have written here."""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        pass
    finally:
        _close(fd)
    try:
        return Confinement.from_report(json.loads(b"".join(chunks)))
    except ValueError:
        return None
