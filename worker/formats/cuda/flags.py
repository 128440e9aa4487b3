"""Whitelist for the candidate's nvcc flags (docs/evaluation.md, Compile flags whitelist).

The Compiler agent proposes a command line. It is split with shlex into argv
(never handed to a shell) and every token must match the whitelist. Input and
output files in the proposal are dropped: the system names them. Anything
else rejects the whole proposal, and the caller falls back to the default
flags while keeping the reason for the agent.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

SHELL_METACHARACTERS = set(";|&$`><\n\r\x00")
# Files the system supplies itself; a proposal may mention them, they are ignored.
_SOURCE_FILE = re.compile(r"^[\w./-]+\.(cu|cpp|cc|cxx|c|o|obj|ptx|cubin|fatbin)$")
_OUTPUT_FILE = re.compile(r"^[\w./-]+$")
_ARCH_VALUE = re.compile(r"^(sm|compute)_(\d+)([af]?)$")

_SIMPLE = {
    "-O0",
    "-O1",
    "-O2",
    "-O3",
    "--use_fast_math",
    "-use_fast_math",
    "-lineinfo",
    "--generate-line-info",
    "--extra-device-vectorization",
    "-extra-device-vectorization",
    # Only widen what device code may contain; no file, host or link effects.
    "--expt-relaxed-constexpr",
    "-expt-relaxed-constexpr",
    "--extended-lambda",
    "--expt-extended-lambda",
    "-expt-extended-lambda",
}
_BOOL_OPTIONS = re.compile(r"^--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)$")
_STD = re.compile(r"^--?std=c\+\+(14|17|20)$")
_MAXRREG = re.compile(r"^--?maxrregcount=(\d+)$")
_PTXAS_OPTIONS = [
    re.compile(p)
    for p in (
        r"^(-v|--verbose)$",
        r"^-O[0-3]$",
        r"^--allow-expensive-optimizations(=(true|false))?$",
        r"^-dlcm=(ca|cg|cv|cs)$",
        r"^--def-load-cache=(ca|cg|cv|cs)$",
        r"^-dscm=(cg|cs|wb|wt)$",
        r"^--def-store-cache=(cg|cs|wb|wt)$",
        r"^(--warn-on-spills|-warn-spills|--warn-on-local-memory-usage|-warn-lmem-usage)$",
        r"^--?maxrregcount=\d+$",
        r"^--?fmad=(true|false)$",
    )
]
# Options that take a value in the next token when written without '='.
_TAKES_VALUE = {
    "-arch",
    "--gpu-architecture",
    "-gencode",
    "--generate-code",
    "-Xptxas",
    "--ptxas-options",
    "-maxrregcount",
    "--maxrregcount",
    "-std",
    "--std",
    "-o",
    "--output-file",
}


@dataclass(frozen=True)
class FlagCheck:
    """Outcome of checking one proposed command line."""

    ok: bool
    flags: tuple[str, ...]  # the argv to use for candidate.o, without nvcc, files, -c or -o
    reason: str = ""  # why the proposal was rejected (names the token)
    ignored: tuple[str, ...] = ()  # file names and -c/-o the system replaces
    libraries: tuple[str, ...] = ()  # from -l<lib>, passed to the link step
    proposed: str = ""

    @property
    def command(self) -> str:
        return shlex.join(("nvcc", *self.flags))


def default_flags(arch: str) -> tuple[str, ...]:
    return ("-O3", f"-arch={arch}", "-std=c++17")


def _arch_number(arch: str) -> str:
    m = _ARCH_VALUE.match(arch)
    return m.group(2) if m else ""


def check_flags(proposal: str | None, arch: str, allowed_libraries: tuple[str, ...] = ()) -> FlagCheck:
    """Check a proposed nvcc command (or bare flags) against the whitelist.

    `arch` is the worker GPU's architecture (e.g. "sm_90"); -arch/-gencode may
    only name it (or its 'a'/'f' feature variants). On rejection the result
    carries the default flags and the reason.
    """
    proposal = (proposal or "").strip()
    fallback = default_flags(arch)
    if not proposal:
        return FlagCheck(True, fallback, proposed=proposal)

    def reject(reason: str) -> FlagCheck:
        return FlagCheck(False, fallback, reason=reason, proposed=proposal)

    bad = sorted({c for c in proposal if c in SHELL_METACHARACTERS})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        return reject(f"shell metacharacter(s) {shown} are not allowed; the command is never run by a shell")
    try:
        argv = shlex.split(proposal)
    except ValueError as exc:
        return reject(f"cannot parse the command: {exc}")
    if not argv:
        return FlagCheck(True, fallback, proposed=proposal)
    if not argv[0].startswith("-"):
        program = argv[0].rsplit("/", 1)[-1]
        if program != "nvcc":
            return reject(f"the command must start with nvcc, not {argv[0]!r}")
        argv = argv[1:]

    want = _arch_number(arch)
    allowed_libs = set(allowed_libraries)
    if "cublas" in allowed_libs:
        allowed_libs.add("cublasLt")  # cuBLAS needs its Lt half at link time
    flags: list[str] = []
    ignored: list[str] = []
    libraries: list[str] = []
    has_arch = False
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, value = token.partition("=")
        if not eq and token in _TAKES_VALUE:
            if i + 1 >= len(argv):
                return reject(f"{token!r} needs a value")
            value = argv[i + 1]
            name = token
            i += 1
        i += 1

        if name in ("-o", "--output-file"):
            if not _OUTPUT_FILE.match(value):
                return reject(f"output name {value!r} is not a plain file name")
            ignored.extend((name, value))
            continue
        if token in ("-c", "--compile"):
            ignored.append(token)
            continue
        if not token.startswith("-"):
            if _SOURCE_FILE.match(token):
                ignored.append(token)
                continue
            return reject(f"{token!r} is not an allowed flag or a source file")
        if token in _SIMPLE or _BOOL_OPTIONS.match(token) or _STD.match(token):
            flags.append(token)
            continue
        if name in ("-std", "--std"):
            if not _STD.match(f"-std={value}"):
                return reject(f"{name} {value!r}: only c++14, c++17 and c++20 are allowed")
            flags.append(f"-std={value}")
            continue
        if name in ("-maxrregcount", "--maxrregcount"):
            if not value.isdigit() or not 1 <= int(value) <= 255:
                return reject(f"{name}={value!r}: needs an integer between 1 and 255")
            flags.append(f"-maxrregcount={value}")
            continue
        if name in ("-arch", "--gpu-architecture"):
            m = _ARCH_VALUE.match(value)
            if not m or m.group(2) != want:
                return reject(f"{name}={value!r}: only the worker's GPU architecture {arch} is allowed")
            flags.append(f"-arch={value}")
            has_arch = True
            continue
        if name in ("-gencode", "--generate-code"):
            reason = _check_gencode(value, want)
            if reason:
                return reject(f"{name} {value!r}: {reason} (the worker's GPU is {arch})")
            flags.extend(("-gencode", value))
            has_arch = True
            continue
        if name in ("-Xptxas", "--ptxas-options"):
            for opt in value.split(","):
                if not any(p.match(opt) for p in _PTXAS_OPTIONS):
                    return reject(f"-Xptxas option {opt!r} is not allowed")
            flags.extend(("-Xptxas", value))
            continue
        if token.startswith("-l") and len(token) > 2:
            lib = token[2:]
            if lib not in allowed_libs:
                allowed = ", ".join(sorted(allowed_libs)) or "none"
                return reject(f"library {token!r} is not allowed for this task (allowed: {allowed})")
            libraries.append(lib)
            continue
        return reject(f"{token!r} is not an allowed flag")

    if not has_arch:
        flags.append(f"-arch={arch}")  # the worker's GPU, whatever the agent forgot
    return FlagCheck(
        True, dedupe_flags(flags), ignored=tuple(ignored), libraries=tuple(dict.fromkeys(libraries)),
        proposed=proposal,
    )


_PAIRED = ("-Xptxas", "-gencode")  # check_flags writes these two as (option, value) pairs


def dedupe_flags(flags: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The flags with each option once, in first-seen order. `-Xptxas a,b` becomes `-Xptxas a -Xptxas b`, so
    an option the system adds itself (ptxas -v, for the viewer's registers and spills) is recognised however
    the proposal wrote it, and a command never shows one twice."""
    units: list[tuple[str, ...]] = []
    i = 0
    while i < len(flags):
        if flags[i] in _PAIRED and i + 1 < len(flags):
            values = flags[i + 1].split(",") if flags[i] == "-Xptxas" else [flags[i + 1]]
            units.extend((flags[i], value) for value in values if value)
            i += 2
        else:
            units.append((flags[i],))
            i += 1
    return tuple(token for unit in dict.fromkeys(units) for token in unit)


def _check_gencode(value: str, want: str) -> str:
    """'' when `arch=compute_90,code=sm_90` (or code=[sm_90,compute_90]) targets `want` only."""
    parts = dict(p.split("=", 1) for p in re.split(r",(?![^\[]*\])", value) if "=" in p)
    if set(parts) != {"arch", "code"}:
        return "expected arch=compute_XX,code=sm_XX"
    codes = parts["code"].strip("[]").split(",")
    for item in (parts["arch"], *codes):
        m = _ARCH_VALUE.match(item.strip())
        if not m or m.group(2) != want:
            return f"{item!r} is not the worker's architecture"
    return ""


# The Compiler agent is told what the whitelist accepts; this module enforces it.
ALLOWED_FLAGS_TEXT = (
    "-O0, -O1, -O2, -O3",
    "-arch=<the worker's sm_XX> or -gencode for it (no other architecture)",
    "--use_fast_math",
    "-lineinfo",
    "-Xptxas <options> (e.g. -v, -O3, --allow-expensive-optimizations=true, -dlcm=ca)",
    "-maxrregcount=<N>",
    "-std=c++14 | c++17 | c++20",
    "--extra-device-vectorization",
    "-ftz=, -prec-div=, -prec-sqrt=, -fmad= (true|false)",
    "-l<library> only where the task allows that library",
)
