"""What every format's static checks share: the calls a candidate may never make (timing, system access,
device control), the violation and report types, and comment stripping that keeps line numbers. The
C/CUDA checks (worker/formats/cuda/static_checks.py) and the other formats' checks build on these."""

from __future__ import annotations

import re
from dataclasses import dataclass

TIMING = (
    "cudaEventCreate",
    "cudaEventCreateWithFlags",
    "cudaEventRecord",
    "cudaEventElapsedTime",
    "cudaEventSynchronize",
    "cudaEventQuery",
    "clock",
    "clock64",
    "gettimeofday",
    "clock_gettime",
    "time",
    "timespec_get",
    "__rdtsc",
    "rdtsc",
    "__nanosleep_timer",
)
SYSTEM = (
    "system",
    "popen",
    "pclose",
    "fork",
    "vfork",
    "execl",
    "execlp",
    "execle",
    "execv",
    "execvp",
    "execvpe",
    "execve",
    "posix_spawn",
    "posix_spawnp",
    "dlopen",
    "dlsym",
    "fopen",
    "freopen",
    "open",
    "openat",
    "creat",
    "syscall",
    "ptrace",
    "kill",
    "socket",
    "connect",
    "mmap",
    "unlink",
    "remove",
    "rename",
    "chdir",
    "mkdir",
    "rmdir",
    "getenv",
    "setenv",
    "putenv",
    "exit",
    "_exit",
    "_Exit",
    "abort",
    "quick_exit",
    "atexit",
    "pthread_create",
    "signal",
    "sigaction",
    "raise",
    "setjmp",
    "longjmp",
)
SYSTEM_TYPES = ("ifstream", "ofstream", "fstream", "filebuf", "thread", "jthread")
DEVICE_CONTROL = (
    "cudaDeviceReset",
    "cudaSetDevice",
    "cudaSetDeviceFlags",
    "cudaDeviceSetLimit",
    "cudaProfilerStart",
    "cudaProfilerStop",
    "cudaCtxResetPersistingL2Cache",
)


@dataclass(frozen=True)
class Violation:
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"line {self.line} " if self.line else ""
        return f"RULE {self.rule}: {where}{self.message}"


@dataclass(frozen=True)
class StaticReport:
    violations: tuple[Violation, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    def messages(self) -> tuple[str, ...]:
        return tuple(str(v) for v in self.violations)


def strip_comments(source: str, blank_strings: bool) -> str:
    """Remove comments (keeping newlines); optionally blank string and char literal contents.

    Output has the same length per line structure, so offsets map to the same line numbers.
    """
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        nxt = source[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and nxt == "*":
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in source[i:j]))
            i = j
        elif c == "R" and nxt == '"' and (i == 0 or not (source[i - 1].isalnum() or source[i - 1] == "_")):
            m = re.match(r'R"([^()\\ ]{0,16})\(', source[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = source.find(f'){m.group(1)}"', i + m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            body = source[i:j]
            out.append(_blank(body, keep=2) if blank_strings else body)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(j + 1, n)
            body = source[i:j]
            out.append(_blank(body, keep=1) if blank_strings else body)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _blank(literal: str, keep: int) -> str:
    inner = "".join(ch if ch == "\n" else " " for ch in literal[keep:-1])
    return literal[:keep] + inner + literal[-1:]
