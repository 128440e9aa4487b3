"""Confinement of builds and candidate programs (worker.engine.confine, docs/threat-model.md), tested with
real hostile programs compiled by gcc and nvcc, the real cuda build path and the kernel's real Landlock
and seccomp. Every attack is run twice: confined, where it must fail, and unconfined as a control, where
it must succeed (so these tests can fail)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.worker.conftest import CPU_HARNESS, FIXTURES
from worker.engine import confine, sandbox
from worker.formats.cuda.build import build

HOSTILE = FIXTURES / "hostile" / "hostile.c"
# Its own /proc/<pid> stays open to the GPU-run policy (the CUDA driver writes there; argv and the scrubbed
# environment are in the process's memory anyway): the attacks are on everything else.
OWN_PROC = ("read_proc_self_cmdline", "read_proc_self_environ")
ATTACKS = ("read_proc_other", "read_etc_passwd", "read_outside_scratch",
           "write_outside_scratch", "connect_tcp", "kill_parent", "ptrace_other", "kill_other", "fork_exec_sh",
           "exec_sh")
REDIS_PORT = 6379

pytestmark = pytest.mark.skipif(confine.landlock_abi() < 6 or not confine.support().seccomp,
                                reason="needs Landlock ABI 6+ and libseccomp (CI and the GPU hosts have both)")


def _redis_listening() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", REDIS_PORT), timeout=1):
            return True
    except OSError:
        return False


def _ptrace_scope() -> int:
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text())
    except (OSError, ValueError):
        return 0


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, chain) -> dict[str, Path]:
    """The hostile program, built by gcc (C) and by nvcc (the same code as CUDA host code)."""
    out = tmp_path_factory.mktemp("hostile")
    gcc = out / "hostile-gcc"
    subprocess.run(["gcc", "-O1", "-pthread", str(HOSTILE), "-o", str(gcc)], check=True)
    cu = out / "hostile.cu"
    cu.write_text(HOSTILE.read_text())
    nv = out / "hostile-nvcc"
    subprocess.run([chain.nvcc, "-arch=sm_90", str(cu), "-o", str(nv)], check=True, capture_output=True)
    return {"gcc": gcc, "nvcc": nv}


def attempts(output: str) -> dict[str, str]:
    """'<attempt> ok' / '<attempt> denied <errno>' lines -> {attempt: 'ok' | 'denied <errno>'}."""
    found = {}
    for line in output.splitlines():
        name, _, outcome = line.partition(" ")
        if name in (*ATTACKS, *OWN_PROC, "write_in_scratch"):
            found[name] = outcome
    return found


def run_hostile(program: Path, where: str, tmp_path: Path, policy: confine.Policy | None) -> tuple[dict, str]:
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("the worker's secret\n")
    victim = subprocess.Popen(["sleep", "60"])  # another process of the same user, outside the sandbox
    try:
        env = {"KW_T_WHERE": where, "KW_T_OUTSIDE": str(outside), "KW_T_VICTIM": str(victim.pid),
               "KW_T_PORT": str(REDIS_PORT)}
        res = sandbox.run([str(program)], scratch, 30, env_extra=env, policy=policy)
        time.sleep(0.1)
        victim_alive = victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
    found = attempts(res.stdout)
    found["victim_alive"] = victim_alive
    found["forged_file"] = (outside / "forged.json").exists()
    return found, res.stdout + res.stderr


@pytest.mark.parametrize("compiler", ["gcc", "nvcc"])
@pytest.mark.parametrize("where", ["constructor", "atexit", "thread"])
def test_a_hostile_constructor_atexit_handler_or_thread_is_denied_everything_outside_its_scratch(
        hostile, compiler, where, tmp_path):
    if not _redis_listening():
        pytest.skip("Redis is not listening on 127.0.0.1:6379 (the connect attempt needs a live port)")
    program = hostile[compiler]
    policy = confine.run_policy(program, tmp_path / "scratch")  # the GPU-run policy the harness gets
    found, output = run_hostile(program, where, tmp_path, policy)
    for attack in ATTACKS:
        assert found.get(attack, "").startswith("denied"), f"{attack}: {found.get(attack)!r}\n{output}"
    assert found["write_in_scratch"] == "ok", output
    assert all(found[own] == "ok" for own in OWN_PROC), output
    assert found["victim_alive"] and not found["forged_file"]
    if where != "atexit":
        assert "main ran" in output  # the program itself still runs
    # The errno says which layer refused: Landlock (EACCES) for files and exec, seccomp (EPERM) for sockets,
    # fork and ptrace, Landlock's signal scope (EPERM) for kill.
    assert found["read_etc_passwd"] == "denied 13" and found["exec_sh"] == "denied 13"
    assert found["connect_tcp"] == "denied 1" and found["fork_exec_sh"] == "denied 1"
    assert found["kill_other"] == "denied 1" and found["ptrace_other"] == "denied 1"


@pytest.mark.parametrize("compiler", ["gcc", "nvcc"])
def test_without_confinement_the_same_attempts_succeed(hostile, compiler, tmp_path):
    """The control: the hostile program is not broken, the sandbox without a policy lets it all through."""
    if not _redis_listening():
        pytest.skip("Redis is not listening on 127.0.0.1:6379")
    found, output = run_hostile(hostile[compiler], "thread", tmp_path, None)
    expected = [a for a in ATTACKS if not (a == "ptrace_other" and _ptrace_scope() > 0)]
    for attack in expected:
        assert found.get(attack) == "ok", f"{attack}: {found.get(attack)!r}\n{output}"
    assert not found["victim_alive"] and found["forged_file"]


def test_the_trampoline_reports_what_it_put_in_force(tmp_path):
    res = sandbox.run(["/bin/true"], tmp_path, 10, policy=confine.build_policy(tmp_path))
    assert res.ok and res.confinement is not None
    c = res.confinement
    assert c.enforced and c.landlock and c.seccomp and not c.refused and c.landlock_abi >= 6
    assert c.policy == "build"
    plain = sandbox.run(["/bin/true"], tmp_path, 10)
    assert plain.confinement is None


def test_a_program_cannot_write_its_own_confinement_report(tmp_path):
    """The report pipe is closed before execve: the program finds no such descriptor to forge it on."""
    code = textwrap.dedent("""
        import os
        for fd in range(3, 256):
            try:
                os.write(fd, b'{"enforced": false, "policy": "forged"}')
                print("wrote", fd)
            except OSError:
                pass
    """)
    policy = confine.build_policy(tmp_path, execute=(sys.prefix, sys.base_prefix))
    res = sandbox.run([sys.executable, "-I", "-c", code], tmp_path, 30, policy=policy)
    assert res.ok, res.output
    assert "wrote" not in res.stdout
    assert res.confinement is not None and res.confinement.policy == "build" and res.confinement.enforced


# ---------------------------------------------------------------- the compile stage


@pytest.mark.parametrize("leak", ["/etc/passwd", "/proc/self/environ"])
def test_a_candidate_including_a_file_outside_the_toolkit_gets_a_compile_error_without_its_content(
        scale_spec, no_gpu_chain, tmp_path, leak):
    source = f'#include "{leak}"\n__global__ void scale_kernel_optimized(float* x) {{ x[0] = 1; }}\n'
    built = build(scale_spec, "fp32", no_gpu_chain, source, None, work_dir=tmp_path / "w",
                  harness_dir=CPU_HARNESS, cache_dir=tmp_path / "cache")
    assert not built.ok and built.failure is built.candidate
    log = built.candidate.log
    assert f"{leak}: Permission denied" in log, log
    assert "root:" not in log and "PATH=" not in log and "HOME=" not in log, log
    assert built.baseline.ok and built.harness.ok  # the task's own compiles still read what they need


@pytest.mark.parametrize("leak", ["/etc/passwd", "/proc/self/environ"])
def test_without_confinement_the_included_file_would_reach_the_compile_log(chain, tmp_path, leak):
    """The control of the compile-stage test: the same nvcc command, unconfined, opens the file (gcc's
    preprocessor reads a /proc file as empty, so only /etc/passwd's content shows; both open)."""
    (tmp_path / "candidate.cu").write_text(f'#include "{leak}"\n')
    res = sandbox.run([chain.nvcc, "-arch=sm_90", "-c", "candidate.cu", "-o", "candidate.o"], tmp_path, 120)
    assert "Permission denied" not in res.output, res.output
    if leak == "/etc/passwd":
        assert not res.ok and "root:" in res.output, res.output


def test_a_makefile_that_reads_or_sends_the_workers_files_is_confined_to_its_workspace(tmp_path):
    """A task.yaml solution's Makefile runs any command: under the build policy it still cannot read
    /etc/passwd, write outside its workspace or reach the network."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "Makefile").write_text(
        "all:\n"
        "\t-cat /etc/passwd\n"
        f"\t-touch {outside}/forged\n"
        "\t-echo made > made.txt\n"
        f"\t-bash -c 'exec 3<>/dev/tcp/127.0.0.1/{REDIS_PORT} && echo connected'\n"
    )
    res = sandbox.run(["make", "-s"], ws, 60, policy=confine.build_policy(ws))
    assert "root:" not in res.output and "Permission denied" in res.output, res.output
    assert not (outside / "forged").exists() and (ws / "made.txt").is_file()
    assert "connected" not in res.stdout


# ---------------------------------------------------------------- a kernel without Landlock


_OLD_KERNEL = """
import ctypes, errno, json, os, sys
sys.path.insert(0, {root!r})
lib = ctypes.CDLL("libseccomp.so.2")
lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_init.argtypes = [ctypes.c_uint32]
lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
lib.seccomp_load.argtypes = [ctypes.c_void_p]
ctx = lib.seccomp_init(0x7FFF0000)
for name in (b"landlock_create_ruleset", b"landlock_add_rule", b"landlock_restrict_self"):
    lib.seccomp_rule_add(ctx, 0x00050000 | errno.ENOSYS, lib.seccomp_syscall_resolve_name(name), 0)
assert lib.seccomp_load(ctx) == 0  # from here on this process and its children see a kernel without Landlock
from worker.engine import confine, sandbox
from worker.engine.context import EvalContext
from worker.engine.entry import Steps, run_steps
from worker.engine.results import Verdict

res = sandbox.run(["/bin/echo", "the program ran"], {scratch!r}, 10, policy=confine.build_policy({scratch!r}))
class Spec:
    name = "t"
class Chain:
    gpu = None
    def describe(self):
        return {{}}
ctx = EvalContext(Spec(), "fp32", None, Chain(), {scratch!r}, None)
steps = Steps(context=None, candidate=None, baseline=None, validate=None)
ev = run_steps(steps, ctx, "candidate", lambda: ctx.base(verdict=Verdict.OK, reason="evaluated"))
print(json.dumps({{"rc": res.returncode, "stdout": res.stdout, "stderr": res.stderr,
                  "refused": res.confinement.refused, "enforced": res.confinement.enforced,
                  "verdict": str(ev.verdict), "reason": ev.reason, "notes": list(ev.notes)}}))
"""


@pytest.mark.parametrize("allowed", [False, True])
def test_on_a_kernel_without_landlock_evaluation_is_refused_or_marked_unconfined(tmp_path, allowed):
    root = str(Path(__file__).resolve().parents[3])
    script = _OLD_KERNEL.format(root=root, scratch=str(tmp_path))
    env = {k: v for k, v in os.environ.items() if k not in ("KW_ALLOW_UNCONFINED", "KW_CONFINE_RUN")}
    if allowed:
        env["KW_ALLOW_UNCONFINED"] = "1"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=root)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert not got["enforced"]
    if allowed:
        assert got["rc"] == 0 and "the program ran" in got["stdout"] and not got["refused"]
        assert got["verdict"] == "ok" and any(n.startswith("UNCONFINED:") and "Landlock" in n for n in got["notes"])
    else:
        assert got["rc"] == 126 and got["refused"] and "the program ran" not in got["stdout"]
        assert "refusing to run unconfined" in got["stderr"] and "KW_ALLOW_UNCONFINED=1" in got["stderr"]
        assert got["verdict"] == "runtime_error" and "refuses to evaluate it unconfined" in got["reason"]


def test_run_confinement_can_be_turned_off_and_the_result_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("KW_CONFINE_RUN", "0")
    assert confine.candidate_run(tmp_path / "prog", tmp_path) is None
    assert confine.evaluation_note().startswith("UNCONFINED RUNS:")
    monkeypatch.delenv("KW_CONFINE_RUN")
    assert confine.candidate_run(tmp_path / "prog", tmp_path) is not None
    assert confine.evaluation_note() == ""


def test_the_lockdown_is_on_by_default_only_where_the_first_stage_confines(monkeypatch):
    for name in ("KW_LOCKDOWN", "KW_CONFINE_RUN"):
        monkeypatch.delenv(name, raising=False)
    assert confine.lockdown_enabled()
    monkeypatch.setenv("KW_LOCKDOWN", "0")
    assert not confine.lockdown_enabled()
    monkeypatch.delenv("KW_LOCKDOWN")
    monkeypatch.setenv("KW_CONFINE_RUN", "0")  # the operator turned confinement off: both stages
    assert not confine.lockdown_enabled()
    monkeypatch.delenv("KW_CONFINE_RUN")
    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)  # no Landlock: the first stage refuses or says so
    assert not confine.lockdown_enabled()


def test_signals_to_processes_inside_the_sandbox_still_work(tmp_path):
    """make and the compilers kill their own children: Landlock's signal scope allows what is inside."""
    code = "import os, signal, time\npid = os.fork()\nif pid == 0:\n    time.sleep(30)\n" \
           "os.kill(pid, signal.SIGTERM)\nprint('status', os.waitpid(pid, 0)[1])\n"
    res = sandbox.run([sys.executable, "-I", "-c", code], tmp_path, 30,
                      policy=confine.build_policy(tmp_path, execute=(sys.prefix, sys.base_prefix)))
    assert res.ok, res.output
    assert f"status {signal.SIGTERM}" in res.stdout


# ---------------------------------------------------------------- the harness run applies it by default


def test_the_harness_run_confines_the_candidate_program_by_default_and_the_operator_can_turn_it_off(
        hostile, scale_spec, tmp_path, monkeypatch):
    """worker.engine.harness.run_harness (every C/CUDA check, timing and locate run) under the gpu-run policy;
    KW_CONFINE_RUN=0 lifts it. The hostile program stands in for a harness with a hostile candidate linked in."""
    from worker.engine.harness import run_harness

    monkeypatch.delenv("KW_CONFINE_RUN", raising=False)
    sizes = [dict(scale_spec.sizes[0])]

    confined = run_harness(str(hostile["gcc"]), scale_spec, "fp32", "check", "candidate", sizes, tmp_path / "a", 30)
    c = confined.result.confinement
    assert c is not None and c.policy == "gpu-run" and c.enforced
    found = attempts(confined.result.stdout)
    assert found["read_etc_passwd"] == "denied 13" and found["exec_sh"] == "denied 13"
    assert found["connect_tcp"].startswith("denied") and found["fork_exec_sh"] == "denied 1"
    assert not confined.ok and confined.crash is not None and confined.crash.kind == "missing_output"

    monkeypatch.setenv("KW_CONFINE_RUN", "0")
    unconfined = run_harness(str(hostile["gcc"]), scale_spec, "fp32", "check", "candidate", sizes, tmp_path / "b", 30)
    assert unconfined.result.confinement is None
    assert attempts(unconfined.result.stdout)["read_etc_passwd"] == "ok"


# ---------------------------------------------------------------- under a GPU tool (ncu, compute-sanitizer)

TOOL_TARGET = r"""
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {  /* what the CUDA driver does at cuInit: writes beneath its own /proc/<pid> */
    int fd = open("/proc/self/comm", O_WRONLY);
    if (fd < 0 || write(fd, "kw-target", 9) != 9) { printf("proc_self_write denied %d\\n", errno); return 3; }
    printf("proc_self_write ok\\n");
    return 0;
}
"""


def _wrapper_tool(tmp_path, name: str):
    """A stand-in GPU tool: a shell script in a toolkit-like bin/ folder that runs its arguments as its child."""
    kit = tmp_path / "kit" / "bin"
    kit.mkdir(parents=True)
    tool = kit / name
    tool.write_text('#!/bin/sh\n"$@"\n')
    tool.chmod(0o755)
    return tool


def test_ncu_may_take_its_lock_file_and_nothing_else_in_tmp(tmp_path):
    """ncu locks /tmp/nsight-compute-lock before it starts its target (on an H200 it profiled nothing without
    it). A stand-in tool named ncu: the policy creates the lock file and grants that one file."""
    tool = _wrapper_tool(tmp_path, "ncu")
    kit = tool.parent
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    policy = confine.tool_policy(confine.run_policy("/bin/sh", scratch), tool)
    assert confine.NCU_LOCK in policy.write and os.path.exists(confine.NCU_LOCK)
    other = f"/tmp/kw-not-the-lock-{os.getpid()}"
    script = f": >> {confine.NCU_LOCK} && echo lock ok; : >> {other} && echo other ok"
    res = sandbox.run([str(tool), "/bin/sh", "-c", script], scratch, 30, policy=policy)
    assert "lock ok" in res.stdout and "other ok" not in res.stdout, res.output
    assert not os.path.exists(other)
    assert confine.NCU_LOCK not in confine.tool_policy(confine.run_policy("/bin/sh", scratch), kit / "other").write


def test_ncus_wrapper_may_run_nsight_compute_installed_outside_the_toolkit(tmp_path, monkeypatch):
    """The toolkit's bin/ncu is a script that runs Nsight Compute from <toolkit>/nsight-compute-* or from
    /opt/nvidia/nsight-compute (on an H200, 2026-11-27: "Nsight Compute is not installed" under the tool policy,
    which let only the toolkit execute). A stand-in: bin/ncu runs the real program from a system-wide folder."""
    kit = tmp_path / "kit"
    home = tmp_path / "opt" / "nvidia" / "nsight-compute"
    (home / "target").mkdir(parents=True)
    inner = home / "target" / "ncu"
    inner.write_text('#!/bin/sh\necho nsight-compute ran\n"$@"\n')
    inner.chmod(0o755)
    (kit / "bin").mkdir(parents=True)
    tool = kit / "bin" / "ncu"
    tool.write_text(f'#!/bin/sh\nexec {inner} "$@"\n')
    tool.chmod(0o755)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    run = confine.run_policy("/bin/true", scratch)
    monkeypatch.setattr(confine, "NSIGHT_COMPUTE_HOMES", ())  # hidden until named: the wrapper cannot start it
    hidden = sandbox.run([str(tool), "/bin/true"], scratch, 30, policy=confine.tool_policy(run, tool))
    assert "nsight-compute ran" not in hidden.stdout, hidden.output
    monkeypatch.setattr(confine, "NSIGHT_COMPUTE_HOMES", (str(home),))
    res = sandbox.run([str(tool), "/bin/true"], scratch, 30, policy=confine.tool_policy(run, tool))
    assert res.ok and "nsight-compute ran" in res.stdout, res.output


def test_a_target_started_by_a_wrapper_tool_runs_and_may_write_its_own_proc(tmp_path):
    """The GPU tools are started through wrapper scripts and fork their target, so the target is neither the
    trampoline's process nor the tool's program (on an H200, 2026-11-27, compute-sanitizer could not be executed
    and ncu's target failed cuInit under the first tool policy). A stand-in tool: a shell script that runs the
    target as its child."""
    tool = _wrapper_tool(tmp_path, "fake-tool")
    src = tmp_path / "target.c"
    src.write_text(TOOL_TARGET)
    target = tmp_path / "target"
    subprocess.run(["gcc", "-O1", str(src), "-o", str(target)], check=True)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    policy = confine.tool_policy(confine.run_policy(str(target), scratch), tool)
    res = sandbox.run([str(tool), str(target)], scratch, 30, policy=policy)
    assert res.ok and "proc_self_write ok" in res.stdout, res.output
    # Still confined: the target may not read the worker's files.
    passwd = sandbox.run([str(tool), "/bin/cat", "/etc/passwd"], scratch, 30, policy=policy)
    assert not passwd.ok and "root:" not in passwd.stdout


def test_a_confined_child_has_a_user_name_though_passwd_stays_closed(tmp_path):
    # torch.compile names its caches with getpass.getuser(), which reads /etc/passwd when no USER or LOGNAME is set;
    # the confinement keeps passwd closed (read_etc_passwd above), so the scrubbed environment names the user.
    policy = confine.candidate_run(sys.executable, tmp_path, read=(sys.prefix, sys.base_prefix),
                                   execute=(*confine.SYSTEM_PATHS, sys.prefix, sys.base_prefix), processes=True)
    code = ("import getpass, pwd, os\nprint(getpass.getuser())\ntry:\n    pwd.getpwuid(os.getuid())\n"
            "    print('passwd open')\nexcept KeyError:\n    print('passwd closed')")
    res = sandbox.run([sys.executable, "-I", "-c", code], tmp_path, 60, policy=policy)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["kernelweb", "passwd", "closed"]
