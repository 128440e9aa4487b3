"""What `ptxas -v` says of each kernel (registers, spills, stack, shared and constant memory), for the viewer and
the prompts, and whether a command line already asks for it."""

from __future__ import annotations

import re

from worker.engine.results import KernelResources

_PTXAS_ENTRY = re.compile(r"ptxas info\s*:\s*Compiling entry function '([^']+)' for '([^']+)'")
_PTXAS_PROPS = re.compile(r"ptxas info\s*:\s*Function properties for (\S+)")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"ptxas info\s*:\s*Used (\d+) registers(.*)")


def asks_ptxas_verbose(flags: tuple[str, ...]) -> bool:
    pairs = zip(flags, flags[1:], strict=False)
    joined = {"-Xptxas=-v", "--ptxas-options=-v", "-Xptxas=--verbose", "--ptxas-options=--verbose"}
    return any(f in joined for f in flags) or any(
        a in ("-Xptxas", "--ptxas-options") and b in ("-v", "--verbose") for a, b in pairs
    )


def demangle_base(name: str) -> str:
    """The plain name of an Itanium-mangled symbol: '_Z18k_kernel_optimizedPfi' -> 'k_kernel_optimized'.

    Enough for display; extern "C" names come back unchanged.
    """
    if not name.startswith("_Z"):
        return name
    rest = name[2:]
    nested = rest.startswith("N")
    rest = rest[1:] if nested else rest
    last = name
    while True:
        m = re.match(r"(\d+)", rest)
        if not m:
            break
        n = int(m.group(1))
        start = m.end()
        last = rest[start : start + n]
        rest = rest[start + n :]
        if not nested or rest[:1] in ("E", "I", ""):
            break
    return last


def parse_ptxas(log: str) -> tuple[KernelResources, ...]:
    """Per-kernel registers, shared/constant memory, barriers, stack and spills from `ptxas -v` output."""
    found: dict[tuple[str, str], dict] = {}
    entry: tuple[str, str] | None = None
    props_for: str | None = None
    for line in log.splitlines():
        if m := _PTXAS_ENTRY.search(line):
            entry = (m.group(1), m.group(2))
            found.setdefault(entry, {})
            props_for = None
        elif m := _PTXAS_PROPS.search(line):
            props_for = m.group(1)
        elif (m := _PTXAS_FRAME.search(line)) and props_for is not None:
            if entry is not None and props_for == entry[0]:
                found[entry].update(
                    stack_bytes=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3))
                )
            props_for = None
        elif (m := _PTXAS_USED.search(line)) and entry is not None:
            info = found[entry]
            info["registers"] = int(m.group(1))
            tail = m.group(2)
            if b := re.search(r"used (\d+) barriers", tail):
                info["barriers"] = int(b.group(1))
            if s := re.search(r"(\d+) bytes smem", tail):
                info["shared_bytes"] = int(s.group(1))
            info["const_bytes"] = sum(int(c) for c in re.findall(r"(\d+) bytes cmem\[\d+\]", tail))
    return tuple(
        KernelResources(kernel=demangle_base(mangled), mangled=mangled, arch=arch, **info)
        for (mangled, arch), info in found.items()
    )


# ---------------------------------------------------------------- hashing and cache
