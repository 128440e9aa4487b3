"""Confinement of a child before it executes untrusted code: no_new_privs, Landlock and seccomp
(docs/threat-model.md).

`sandbox.run(..., policy=...)` hands a `Policy` to its trampoline, which calls `apply` *before* `execve`:
Landlock domains and seccomp filters survive `execve` and are inherited by every child, so the real
program is confined from its first instruction, static constructors included.

- **Landlock** (filesystem, TCP, scoping): the child may read, execute and write only the paths the
  policy names; TCP bind/connect are refused where the kernel's Landlock ABI is 4 or newer; from ABI 6
  it cannot signal or reach abstract unix sockets of processes outside its domain (the worker).
- **seccomp** (libseccomp through ctypes): EPERM for sockets (unless the policy allows them), ptrace,
  reading other processes' memory, kernel keyrings, namespaces, mounts, modules, BPF, io_uring,
  perf_event_open (unless profiling) and, where the policy forbids process creation, fork/vfork and
  clone without CLONE_THREAD (threads stay allowed). clone3 answers ENOSYS so libc falls back to clone,
  whose flags the filter can see.

This module is loaded by path in the trampoline (stdlib only, no package imports) and is Django-free.
Operator settings, read by the worker (never by the child):

- `KW_CONFINE_RUN` (default on): `0`/`off` runs candidate programs without the confinement (builds
  stay confined); for a GPU host where validation shows the driver needs more than the GPU-run policy.
- `KW_CONFINE_EXTRA_READ`: extra read-only paths (`:`-separated) for every run policy, the narrower fix.
- `KW_ALLOW_UNCONFINED` (default off): where the kernel lacks Landlock or seccomp, evaluations are
  refused; `1` lets them run, and every result then says it ran unconfined.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import json
import os
import platform
import stat
import sys
from dataclasses import asdict, dataclass, field

# ---------------------------------------------------------------- Landlock (include/uapi/linux/landlock.h)

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # same on x86_64 and arm64
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS = 38

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

# Rights that make sense on a file (Landlock refuses directory rights in a rule on a file).
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
_READ = FS_READ_FILE | FS_READ_DIR
_EXEC = _READ | FS_EXECUTE
_WRITE = (_READ | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG | FS_MAKE_SYM
          | FS_MAKE_FIFO | FS_MAKE_SOCK | FS_REFER | FS_TRUNCATE)
_DEVICE = FS_READ_FILE | FS_WRITE_FILE | FS_IOCTL_DEV


def _handled_fs(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (too old, or Landlock not enabled at boot)."""
    if not sys.platform.startswith("linux"):
        return 0
    abi = _libc().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(abi), 0)


# ---------------------------------------------------------------- seccomp through libseccomp

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_CMP_NE, _SCMP_CMP_MASKED_EQ = 1, 7
_CLONE_THREAD = 0x00010000
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: no new namespaces (kernel attack surface).
_CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
_AF_UNIX = 1

# Never needed by a compiler, make, ninja, the CUDA runtime or PyTorch; each is a way out of the box or into
# another process, the kernel's keyrings or its rarely audited interfaces.
DENIED_ALWAYS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig",
    "fspick", "mount_setattr", "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog", "vhangup",
    "bpf", "userfaultfd", "keyctl", "add_key", "request_key", "setns", "unshare",
    "open_by_handle_at", "name_to_handle_at", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "iopl", "ioperm", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname",
    "setdomainname", "uselib",
)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


def _libseccomp() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_arch_native.restype = ctypes.c_uint32
    lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    lib.seccomp_arch_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_arch_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    return lib


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


# ---------------------------------------------------------------- the policy


@dataclass(frozen=True)
class Policy:
    """What a confined child may do. Paths are granted with everything beneath them; a path that does not
    exist on this machine is skipped (a GPU path on a CPU host)."""

    name: str  # shown in reports: build | run | gpu-run | tool
    read: tuple[str, ...] = ()  # read files, list directories
    execute: tuple[str, ...] = ()  # read and execute
    write: tuple[str, ...] = ()  # read, write, create, remove (and execute, where processes are allowed)
    devices: tuple[str, ...] = ()  # device files: read, write, ioctl
    network: bool = False  # sockets of any family, TCP bind/connect
    unix_sockets: bool = False  # AF_UNIX sockets only (a profiler and its target), abstract ones unscoped
    # AF_UNIX socket() only: Landlock still scopes abstract sockets to the domain and refuses TCP. The CUDA
    # driver creates one at initialisation (cudaErrorOperatingSystem without it, found on an H100).
    local_sockets: bool = False
    processes: bool = False  # fork/vfork/clone without CLONE_THREAD (threads are always allowed)
    profiler: bool = False  # perf_event_open

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Policy:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})

    def with_paths(self, *, read: tuple[str, ...] = (), write: tuple[str, ...] = (),
                   execute: tuple[str, ...] = ()) -> Policy:
        return Policy(**{**self.to_dict(), "read": (*self.read, *read), "write": (*self.write, *write),
                         "execute": (*self.execute, *execute)})


# Read-only everywhere: what the dynamic loader and libc read. Not /etc at large (passwd, the app's
# environment file), not /home, /root, /opt, /srv or the app's folder.
SYSTEM_PATHS = _SYSTEM_READ = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc/ld.so.cache",
                "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives")
# Where the shells of wrapper scripts live (the toolkit's tool launchers are scripts).
_SHELLS = ("/bin", "/usr/bin")
# Character devices every program may open: /dev/null and friends (not /dev/shm, shared with others).
_COMMON_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# The CUDA driver (libcuda) on the GPU run, from NVIDIA's documentation of the device files and of what
# the driver reads: device nodes (/dev/nvidiactl, /dev/nvidia<N>, /dev/nvidia-uvm, -uvm-tools, the MIG
# capability nodes /dev/nvidia-caps/*), /proc/driver/nvidia (params, gpus, capabilities), PCI topology
# in sysfs (/sys/bus/pci reaches /sys/devices), CPU and NUMA layout (/sys/devices/system, /proc/cpuinfo),
# and the kernel's VM limits. On an H100 (2026-11-26) cuInit also needed write access beneath its own
# /proc/<pid> and an AF_UNIX socket(); with less it fails with cudaErrorOperatingSystem (docs/threat-model.md).
_GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                "/dev/nvidia-caps", "/dev/dri")
_GPU_READ = ("/proc/driver/nvidia", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/sys/vm",
             "/proc/sys/kernel/numa_balancing", "/proc/devices", "/sys/devices", "/sys/bus/pci",
             "/sys/module/nvidia", "/sys/kernel/mm/transparent_hugepage", "/etc/nvidia",
             "/usr/share/nvidia", "/usr/local/nvidia", "/run/nvidia-persistenced")


def _gpu_devices() -> tuple[str, ...]:
    return (*_GPU_DEVICES, *sorted(p for p in glob.glob("/dev/nvidia[0-9]*")))


def _loaders() -> tuple[str, ...]:
    """The dynamic loader(s): execve of a dynamic program opens its ELF interpreter with EXECUTE."""
    found = set()
    for pattern in ("/lib*/ld-linux*.so*", "/lib/*-linux-gnu*/ld-linux*.so*", "/usr/lib*/ld-linux*.so*",
                    "/usr/lib/*-linux-gnu*/ld-linux*.so*", "/lib/ld-musl-*.so*"):
        found.update(glob.glob(pattern))
    return tuple(sorted(found))


def extra_reads() -> tuple[str, ...]:
    return tuple(p for p in os.environ.get("KW_CONFINE_EXTRA_READ", "").split(":") if p)


def build_policy(scratch: str | os.PathLike, *, read: tuple = (), write: tuple = (),
                 execute: tuple = ()) -> Policy:
    """A compiler, make or ninja: runs the system's and the toolkit's programs (fork + exec), reads the
    system's libraries and headers, the toolkit and `read`; writes only its scratch folder and `write`.
    No /proc, no /etc beyond the loader's files, no network, no other processes."""
    return Policy(
        name="build",
        read=tuple(map(str, read)),
        execute=(*_SYSTEM_READ, *_toolkit_roots(), *map(str, execute)),
        write=(str(scratch), *map(str, write)),
        devices=_COMMON_DEVICES,
        processes=True,
    )


def run_policy(program: str | os.PathLike, scratch: str | os.PathLike, *, read: tuple = (), write: tuple = (),
               execute: tuple = (), processes: bool = False, gpu: bool = True) -> Policy:
    """A candidate's program: executes only `program` (and the loader), reads the system's libraries,
    `read` and, with `gpu`, what the CUDA driver needs; writes only its scratch folder and `write`; no
    fork unless `processes`, no network, no /proc/self, no other processes."""
    return Policy(
        name="gpu-run" if gpu else "run",
        read=(*_SYSTEM_READ, *_toolkit_roots(), *(_GPU_READ if gpu else ()), *map(str, read), *extra_reads()),
        execute=(str(program), *_loaders(), *map(str, execute)),
        # "/proc/self" is opened by the trampoline, after fork: the rule is the confined process's own
        # /proc/<pid> (its threads, its own memory), never another process's.
        write=(str(scratch), *map(str, write), *(("/proc/self",) if gpu else ())),
        devices=(*_COMMON_DEVICES, *(_gpu_devices() if gpu else ())),
        processes=processes,
        local_sockets=gpu,
    )


# Nsight Compute serializes profiling sessions with a lock file at this fixed path (not beneath TMPDIR), which it
# creates on first use and never removes. Granted while ncu profiled nothing under the tool policy (H200,
# 2026-11-27); the cause then found was Nsight Compute's folder (below), so whether ncu also needs this file under
# the policy was not separated.
NCU_LOCK = "/tmp/nsight-compute-lock"


def _ncu_lock() -> tuple[str, ...]:
    """The lock file, created here if missing (the policy grants that one file, never /tmp), or () when it
    cannot be."""
    try:
        os.close(os.open(NCU_LOCK, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o666))
    except OSError:
        return ()
    return (NCU_LOCK,)


# Where the toolkit's ncu wrapper looks for Nsight Compute besides <toolkit>/nsight-compute-* (inside the toolkit
# folder the policy grants anyway): a system-wide install. On the H200 hosts of 2026-11-27 it was only there, and the
# wrapper stopped with "Nsight Compute is not installed" while the policy hid it.
# NVIDIA's standalone installer uses the second (toolchain.detect looks for ncu in both).
NSIGHT_COMPUTE_HOMES = ("/opt/nvidia/nsight-compute", "/usr/local/NVIDIA-Nsight-Compute*")


def _tool_homes(tool: str | os.PathLike) -> tuple[str, ...]:
    """The folders outside the toolkit holding the programs a tool's wrapper runs: Nsight Compute's for ncu."""
    if os.path.basename(str(tool)) != "ncu":
        return ()
    found = (p for pattern in NSIGHT_COMPUTE_HOMES for p in sorted(glob.glob(pattern)))
    return tuple(os.path.realpath(p) for p in found if os.path.isdir(p))


def tool_policy(policy: Policy, tool: str | os.PathLike) -> Policy:
    """`policy` for a run under a GPU tool (compute-sanitizer, ncu): the tool starts the target and talks
    to it over local sockets, so processes, AF_UNIX sockets, /proc (the tool reads its target's) and the
    tool's folder are added. The toolkit starts its tools through shell wrappers (/bin/sh must execute), and
    the target the tool forks is not the process whose /proc/self the trampoline opened, so the CUDA driver's
    writes beneath its own /proc/<pid> need /proc writable (other processes' private files stay behind
    Landlock's ptrace scoping). ncu also needs its lock file (NCU_LOCK) and Nsight Compute's own folder, which
    its wrapper may find outside the toolkit (NSIGHT_COMPUTE_HOMES). Files and the network stay confined."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(str(tool))))
    lock = _ncu_lock() if os.path.basename(str(tool)) == "ncu" else ()
    homes = _tool_homes(tool)
    return Policy(**{**policy.to_dict(), "name": policy.name + "+tool", "processes": True, "unix_sockets": True,
                     "profiler": True, "read": (*policy.read, "/proc"),
                     "execute": (*policy.execute, root, *homes, *_SHELLS),
                     "write": (*policy.write, "/proc", *lock), "devices": (*policy.devices, "/dev/shm")})


def lockdown_enabled() -> bool:
    """The C/CUDA harness applies the second stage (tasks/_harness/kw_lockdown.h) once CUDA is up; on unless
    KW_LOCKDOWN=0 (docs/threat-model.md, "Lockdown": every candidate of the GPU suite kept its verdict under it).
    Only where the first stage confines too: with run confinement off (KW_CONFINE_RUN=0), or on a kernel without
    Landlock (where the first stage refuses to run, or runs unconfined and says so), the second has nothing to add."""
    return _flag("KW_LOCKDOWN", True) and runs_confined() and landlock_abi() >= 1


def loads_after_lockdown() -> bool:
    """KW_LOAD_AFTER_LOCKDOWN: build a C/CUDA candidate as a shared object that kwbench loads once the lockdown is
    in force, so its static constructors run under it too (tasks/_harness/kw_candidate.h; docs/threat-model.md,
    "Loaded after the lockdown"). On unless KW_LOAD_AFTER_LOCKDOWN=0: every candidate of the GPU suite kept its
    verdict loaded so (docs/gpu-validation.md)."""
    return _flag("KW_LOAD_AFTER_LOCKDOWN", True)


def candidate_run(program: str | os.PathLike, scratch: str | os.PathLike, *, tool: str | os.PathLike | None = None,
                  **kwargs) -> Policy | None:
    """The confinement of a candidate's program (`run_policy`, under `tool` when one wraps it), or None where
    the operator turned run confinement off (KW_CONFINE_RUN=0)."""
    if not runs_confined():
        return None
    policy = run_policy(os.path.realpath(str(program)), scratch, **kwargs)
    return tool_policy(policy, tool) if tool else policy


def _toolkit_roots() -> tuple[str, ...]:
    """The CUDA toolkit, the extra NVIDIA libraries and the operator's LD_LIBRARY_PATH (a container's driver
    libraries often live there): all set by the worker's environment, never by a candidate."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda", "/opt/cuda",
             os.environ.get("KW_CUDA_EXTRA"), *os.environ.get("LD_LIBRARY_PATH", "").split(":")]
    return tuple(dict.fromkeys(os.path.realpath(r) for r in roots if r and os.path.isabs(r) and r.strip("/")))


def paths_in(argv: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Folders an argv names (sources, -I/-L folders): for a trusted command line only (a task's baseline or
    harness, never a candidate's flags)."""
    found: list[str] = []
    for arg in argv[1:]:
        for prefix in ("-I", "-L", "-isystem", "-rpath=", "-rpath-link="):
            if arg.startswith(prefix) and len(arg) > len(prefix):
                arg = arg[len(prefix):]
        if os.path.isabs(arg) and os.path.exists(arg):
            found.append(arg if os.path.isdir(arg) else os.path.dirname(arg))
    return tuple(dict.fromkeys(found))


# ---------------------------------------------------------------- settings and what this kernel offers


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    return raw not in ("0", "off", "no", "false")


def runs_confined() -> bool:
    """KW_CONFINE_RUN: confine candidate programs (default on)."""
    return _flag("KW_CONFINE_RUN", True)


def unconfined_allowed() -> bool:
    """KW_ALLOW_UNCONFINED: evaluate even where the kernel cannot confine (default off: refuse)."""
    return _flag("KW_ALLOW_UNCONFINED", False)


@dataclass(frozen=True)
class Support:
    """What this kernel and libc offer: probed once per worker process."""

    landlock_abi: int
    seccomp: bool
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def complete(self) -> bool:
        return self.landlock_abi >= 1 and self.seccomp


_SUPPORT: Support | None = None


def support() -> Support:
    global _SUPPORT
    if _SUPPORT is None:
        problems = []
        abi = landlock_abi()
        if abi < 1:
            problems.append(f"Landlock is unavailable on kernel {platform.release()} (it needs Linux 5.13+ "
                            "with landlock in the lsm= boot list)")
        elif abi < 4:
            problems.append(f"Landlock ABI {abi} has no TCP rules (ABI 4, Linux 6.7); seccomp still refuses sockets")
        if abi and abi < 6:
            problems.append(f"Landlock ABI {abi} cannot scope signals (ABI 6, Linux 6.12)")
        lib = _libseccomp()
        if lib is None:
            problems.append("libseccomp.so.2 is not installed")
        _SUPPORT = Support(abi, lib is not None, tuple(problems))
    return _SUPPORT


def unconfined_reason() -> str:
    """Why candidate code on this worker runs without confinement ('' when it is confined)."""
    s = support()
    if not s.complete:
        missing = [p for p in s.problems if "unavailable" in p or "not installed" in p]
        return "; ".join(missing)
    return ""


def evaluation_note() -> str:
    """The note every Evaluation carries when something of its confinement was off ('' when all was on)."""
    reason = unconfined_reason()
    if reason:
        return f"UNCONFINED: builds and runs were not confined on this worker ({reason}; KW_ALLOW_UNCONFINED=1)"
    if not runs_confined():
        return ("UNCONFINED RUNS: candidate programs ran without Landlock/seccomp (KW_CONFINE_RUN=0 on this "
                "worker); builds were confined")
    partial = support().problems
    if partial:
        return "PARTLY CONFINED: " + "; ".join(partial)
    return ""


# ---------------------------------------------------------------- applying it (in the trampoline)


def apply(policy: Policy) -> dict:
    """Confine the calling process (single-threaded, about to execve). Never raises: returns a report
    {policy, no_new_privs, landlock_abi, landlock, seccomp, enforced, problems}; `enforced` is true only
    when no_new_privs, Landlock and seccomp are all in force."""
    report: dict = {"policy": policy.name, "no_new_privs": False, "landlock_abi": 0, "landlock": False,
                    "seccomp": False, "enforced": False, "problems": []}
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
        report["no_new_privs"] = True
    else:
        report["problems"].append(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
    try:
        _landlock(libc, policy, report)
    except OSError as exc:
        report["problems"].append(f"Landlock: {exc}")
    try:
        _seccomp(policy, report)
    except OSError as exc:
        report["problems"].append(f"seccomp: {exc}")
    report["enforced"] = bool(report["no_new_privs"] and report["landlock"] and report["seccomp"])
    return report


def _landlock(libc: ctypes.CDLL, policy: Policy, report: dict) -> None:
    abi = landlock_abi()
    report["landlock_abi"] = abi
    if abi < 1:
        report["problems"].append("Landlock is unavailable on this kernel")
        return
    handled = _handled_fs(abi)
    attr = _RulesetAttr(handled_access_fs=handled)
    size = 8
    if abi >= 4:
        size = 16
        if not (policy.network or policy.unix_sockets):
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # no rule added: no TCP port at all
    else:
        report["problems"].append(f"Landlock ABI {abi}: no TCP rules (seccomp refuses sockets)")
    if abi >= 6:
        size = 24
        attr.scoped = SCOPE_SIGNAL | (0 if policy.unix_sockets or policy.network else SCOPE_ABSTRACT_UNIX_SOCKET)
    else:
        report["problems"].append(f"Landlock ABI {abi}: signals to other processes are not scoped")
    fd = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        write = _WRITE | (FS_EXECUTE if policy.processes else 0)
        grants = [(p, _READ) for p in policy.read] + [(p, _EXEC) for p in policy.execute]
        grants += [(p, write) for p in policy.write] + [(p, _DEVICE) for p in policy.devices]
        for path, rights in grants:
            _add_path(libc, int(fd), path, rights & handled, report)
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(int(fd)), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
        report["landlock"] = True
    finally:
        os.close(int(fd))


def _add_path(libc: ctypes.CDLL, ruleset: int, path: str, rights: int, report: dict) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # not on this machine (a GPU device on a CPU host)
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= _FILE_RIGHTS
        if not rights:
            return
        rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                        ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            report["problems"].append(f"Landlock rule for {path}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def _seccomp(policy: Policy, report: dict) -> None:
    lib = _libseccomp()
    if lib is None:
        report["problems"].append("libseccomp.so.2 is not installed: no seccomp filter")
        return
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError(errno.ENOMEM, "seccomp_init failed")
    try:
        native = lib.seccomp_arch_native()
        x86_64 = lib.seccomp_arch_resolve_name(b"x86_64")
        if native == x86_64:
            # x32 system calls share the x86_64 audit arch with their own numbers: filter them too.
            x32 = lib.seccomp_arch_resolve_name(b"x32")
            if x32 and lib.seccomp_arch_add(ctx, x32) not in (0, -errno.EEXIST):
                report["problems"].append("seccomp: cannot add the x32 arch")
        eperm = _errno_action(errno.EPERM)

        def rule(name: str, action: int = eperm, *cmps: tuple[int, int, int, int]) -> None:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:
                return  # not a system call on this architecture
            arr = (_ArgCmp * max(len(cmps), 1))(*[_ArgCmp(*c) for c in cmps])
            rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), arr if cmps else None)
            if rc < 0:
                raise OSError(-rc, f"seccomp rule for {name}: {os.strerror(-rc)}")

        for name in DENIED_ALWAYS:
            rule(name)
        rule("personality", eperm, (0, _SCMP_CMP_NE, 0, 0))  # only PER_LINUX: no ASLR off, no READ_IMPLIES_EXEC
        if not policy.profiler:
            rule("perf_event_open")
        for flag in _CLONE_NAMESPACES:
            rule("clone", eperm, (0, _SCMP_CMP_MASKED_EQ, flag, flag))
        rule("clone3", _errno_action(errno.ENOSYS))  # its flags are behind a pointer: libc falls back to clone
        if not policy.processes:
            rule("fork")
            rule("vfork")
            rule("clone", eperm, (0, _SCMP_CMP_MASKED_EQ, _CLONE_THREAD, 0))
        if not policy.network:
            if policy.unix_sockets or policy.local_sockets:
                rule("socket", eperm, (0, _SCMP_CMP_NE, _AF_UNIX, 0))
            else:
                rule("socket")
        rc = lib.seccomp_load(ctx)
        if rc < 0:
            raise OSError(-rc, f"seccomp_load: {os.strerror(-rc)}")
        report["seccomp"] = True
    finally:
        lib.seccomp_release(ctx)


def report_json(report: dict) -> str:
    return json.dumps(report, sort_keys=True)
