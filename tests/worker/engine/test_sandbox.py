import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from worker.engine import sandbox


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for a reaper (a container's PID 1 may never reap)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def wait_dead(pid: int, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_kills_a_hanging_child_and_its_grandchild_at_the_timeout(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    child = python(f"""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(pid_file)!r}, "w").write(str(p.pid))
        time.sleep(300)
    """)
    res = sandbox.run(child, tmp_path / "run", timeout_s=2.0, grace_s=0.5)
    assert res.timed_out and not res.ok
    assert res.signal == signal.SIGTERM  # the polite signal was enough; the grandchild goes in the sweep
    assert wait_dead(int(pid_file.read_text()))


def test_sweeps_background_processes_left_by_a_child_that_exited(tmp_path):
    pid_file = tmp_path / "bg.pid"
    child = python(f"""
        import subprocess, sys
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(pid_file)!r}, "w").write(str(p.pid))
    """)
    res = sandbox.run(child, tmp_path / "run", timeout_s=30)
    assert res.ok and not res.timed_out
    assert wait_dead(int(pid_file.read_text()))


def test_scrubs_the_environment_to_the_allowlist(tmp_path, monkeypatch):
    for secret in (
        "OPENAI_API_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "DJANGO_SECRET_KEY",
        "AWS_SECRET_ACCESS_KEY",
    ):
        monkeypatch.setenv(secret, "leaked")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    res = sandbox.run(python("import json, os; print(json.dumps(dict(os.environ)))"), tmp_path / "run", 30)
    env = json.loads(res.stdout)
    assert "leaked" not in env.values()
    assert set(env) <= set(sandbox.ENV_ALLOWLIST) | {"HOME", "TMPDIR", "LC_CTYPE", "USER", "LOGNAME"}
    assert env["HOME"] == str(tmp_path / "run") and env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["USER"] == env["LOGNAME"] == "kernelweb"  # not the worker's own user


def test_runs_in_the_scratch_folder_in_a_new_session(tmp_path):
    res = sandbox.run(
        python("import os; print(os.getcwd()); print(os.getsid(0) == os.getpid())"), tmp_path / "scratch", 30
    )
    cwd, own_session = res.stdout.split()
    assert Path(cwd) == tmp_path / "scratch" and own_session == "True"


def test_writes_output_to_files_and_reads_back_a_capped_head_and_tail(tmp_path):
    res = sandbox.run(
        python("import sys; sys.stdout.write('A' * 50000 + 'END'); sys.stderr.write('oops')"),
        tmp_path / "run",
        30,
        output_cap=1000,
    )
    assert Path(res.stdout_path).stat().st_size == 50003
    assert res.stdout.startswith("A" * 500) and res.stdout.endswith("END")
    assert "bytes not shown" in res.stdout and len(res.stdout) < 1100
    assert res.stderr == "oops"


def test_reports_the_signal_that_ended_the_child(tmp_path):
    res = sandbox.run(python("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"), tmp_path / "run", 30)
    assert res.signal == signal.SIGSEGV and res.returncode == -signal.SIGSEGV


def test_limits_file_size_and_disables_core_dumps(tmp_path):
    child = python("""
        import resource
        print(resource.getrlimit(resource.RLIMIT_CORE)[0])
        try:
            with open("big", "wb") as f:
                f.write(b"x" * 3_000_000)
        except OSError as exc:
            print("refused", exc.errno)
    """)
    res = sandbox.run(child, tmp_path / "run", 30, limits=sandbox.Limits(file_bytes=1_000_000))
    lines = res.stdout.split("\n")
    assert lines[0] == "0"
    assert "refused" in res.stdout
    assert (tmp_path / "run" / "big").stat().st_size <= 1_000_000


def test_a_missing_program_is_a_result_not_an_exception(tmp_path):
    res = sandbox.run(["/nonexistent/program"], tmp_path / "run", 30)
    assert res.returncode == 127 and "cannot execute" in res.stderr


def test_never_uses_a_shell(tmp_path):
    res = sandbox.run(["echo", "$HOME; touch pwned"], tmp_path / "run", 30)
    assert res.stdout.strip() == "$HOME; touch pwned"
    assert not (tmp_path / "run" / "pwned").exists()


def test_does_not_inherit_the_parents_open_files(tmp_path):
    r, w = os.pipe()
    try:
        res = sandbox.run(python(f"import os; os.fstat({w}); print('open')"), tmp_path / "run", 30)
        assert "open" not in res.stdout
    finally:
        os.close(r)
        os.close(w)


PROBE = textwrap.dedent("""
    import socket, sys
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
        print("host reachable")
    except OSError as exc:
        print(f"host unreachable: {exc}")
    with socket.create_server(("127.0.0.1", 0)) as own:  # a loopback of its own still works
        socket.create_connection(own.getsockname(), timeout=2).close()
        print("own loopback ok")
""")


def _isolation_available() -> bool:
    probe = sandbox.run([sys.executable, "-c", "print(1)"], Path("/tmp"), 10,
                        limits=sandbox.Limits(isolate_network=True), name="netns-probe")
    return "no network namespace" not in probe.stderr


def test_an_isolated_child_reaches_no_host_service_but_keeps_its_own_loopback(tmp_path):
    import socket

    if not _isolation_available():
        pytest.skip("this kernel or container refuses network namespaces (unshare CLONE_NEWNET)")
    with socket.create_server(("127.0.0.1", 0)) as host_service:
        port = str(host_service.getsockname()[1])
        free = sandbox.run([sys.executable, "-c", PROBE, port], tmp_path / "a", 20)
        caged = sandbox.run([sys.executable, "-c", PROBE, port], tmp_path / "b", 20,
                            limits=sandbox.Limits(isolate_network=True))
    assert free.ok and "host reachable" in free.stdout
    assert caged.ok, caged.stderr
    assert "host unreachable" in caged.stdout and "own loopback ok" in caged.stdout


def test_candidates_run_with_the_network_cut():
    from worker.engine.harness import HARNESS_LIMITS

    assert HARNESS_LIMITS.isolate_network


def test_a_child_does_not_outlive_the_process_that_started_it(tmp_path):
    # A worker (or a bench script stopped by `timeout`) that dies must not leave its candidate running on the GPU: the
    # child is in a session of its own, out of reach of the group's signals, so the kernel kills it (PDEATHSIG).
    pidfile = tmp_path / "child.pid"
    child = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    parent = subprocess.Popen([sys.executable, "-c", "import sys; from worker.engine import sandbox; "
                               f"sandbox.run([sys.executable, '-c', {child!r}], {str(tmp_path / 'run')!r}, 300)"],
                              cwd=Path(__file__).parents[3])
    deadline = time.monotonic() + 30
    while not (pidfile.is_file() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the child lived on after its parent was killed")


def test_a_child_given_cpus_runs_only_on_them_and_so_does_what_it_starts(tmp_path):
    cpu = max(os.sched_getaffinity(0))
    code = """
        import os, subprocess, sys
        print(sorted(os.sched_getaffinity(0)))
        print(subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                             capture_output=True, text=True).stdout.strip())
    """
    pinned = sandbox.run(python(code), tmp_path, 30, name="pinned", cpus=(cpu,))
    assert pinned.returncode == 0, pinned.stderr
    assert pinned.stdout.split("\n")[:2] == [f"[{cpu}]", f"[{cpu}]"]
    free = sandbox.run(python(code), tmp_path, 30, name="free")
    assert free.stdout.split("\n")[0] == str(sorted(os.sched_getaffinity(0)))
