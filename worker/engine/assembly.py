"""PTX and SASS of a compiled object, for the viewer's assembly tab (cuobjdump, no recompile).

`-arch=sm_XX` embeds both the SASS for sm_XX and the PTX for compute_XX in the object's fatbin, so
`cuobjdump -ptx` reads the PTX back; the SASS comes from the cubin (`cuobjdump -xelf all`) through
`nvdisasm -gi`, which annotates each instruction with its source line when the object was built
with `-lineinfo`. Both tools come with full CUDA toolkits, and with `make .cuda-libs/.ready`
(NVIDIA's wheels) on compiler-only machines. Without them the build still succeeds: the text stays
empty and the reason goes to a note.

Source lines travel inside the listings, so that every copy of a listing (database, trajectory
export) keeps them: PTX keeps its `.loc FILE LINE COL` directives, and the SASS carries one
`//## line N` marker (N the line of the compiled .cu file, inlined code resolved to its call site)
before each instruction whose line differs from the previous one's. `line_map()` turns a listing
into display lines and the source line of each.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from worker.engine import confine, sandbox
from worker.engine.toolchain import find_tool

CAP = 200 * 1024  # per listing; a turn's row stays small even with a large unrolled kernel
_ENCODING_ONLY = re.compile(r"^\s*/\* 0x[0-9a-f]{16} \*/\s*$")
_ENCODING_TAIL = re.compile(r"\s*/\* 0x[0-9a-f]{16} \*/\s*$")
_FATBIN_HEADER = re.compile(r"^(Fatbin (elf|ptx) code:|=+|arch = |code version = |host = |compile_size = |compressed$"
                            r"|ptxasOptions = )")


@dataclass(frozen=True)
class Assembly:
    ptx: str = ""
    sass: str = ""
    note: str = ""  # why a listing is missing or cut


def _extra_bin() -> list[str]:
    root = os.environ.get("KW_CUDA_EXTRA")
    return [str(Path(root) / "bin" / "*")] if root else []


def tools() -> tuple[str | None, str | None]:
    """(cuobjdump, nvdisasm) paths, or None where missing."""
    def find(name: str) -> str | None:
        return find_tool(name, [p.replace("*", name) for p in _extra_bin()])

    return find("cuobjdump"), find("nvdisasm")


def clean_sass(text: str) -> str:
    """Instructions without their hex encodings and without the fatbin banners."""
    lines = []
    for line in text.splitlines():
        if _ENCODING_ONLY.match(line) or _FATBIN_HEADER.match(line.strip()):
            continue
        lines.append(_ENCODING_TAIL.sub("", line).rstrip())
    return _squeeze(lines)


def clean_ptx(text: str) -> str:
    return _squeeze([line.rstrip() for line in text.splitlines() if not _FATBIN_HEADER.match(line.strip())])


def _squeeze(lines: list[str]) -> str:
    """At most one blank line in a row, none at the ends."""
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip("\n")


def _cap(text: str, what: str, notes: list[str]) -> str:
    if len(text) <= CAP:
        return text
    notes.append(f"{what} cut at {CAP // 1024} KiB of {len(text) // 1024} KiB")
    return text[:CAP] + f"\n[... {what} cut at {CAP // 1024} KiB]"


_LINE_MARKER = re.compile(r"^\s*//## line (\d+|-)\s*$")
_NVDISASM_LOC = re.compile(r'(?:File|inlined at) "([^"]*)", line (\d+)')
_SASS_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/")
_SASS_LABEL = re.compile(r"^\.L\w*:$")
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(?:.*?inlined_at\s+(\d+)\s+(\d+)\s+\d+)?")
_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_PTX_FUNCTION = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b")


def _main_file(locations: list[str]) -> str:
    """The compiled .cu file: the most frequent non-header file among the line markers."""
    sources = [f for f in locations if not f.endswith((".h", ".hpp", ".cuh", ".inl"))]
    return max(set(sources), key=sources.count) if sources else ""


def normalize_nvdisasm(text: str) -> str:
    """`nvdisasm -c -gi` output in cuobjdump's layout (`Function : name`, `/*0000*/ INSTR ;`, labels), with
    a `//## line N` marker before each instruction whose source line of the compiled file changes.

    A marker chain `File "h.hpp", line 449 inlined at "k.cu", line 22` resolves to line 22 of k.cu;
    code that reaches the compiled file through no chain gets `//## line -`."""
    main = _main_file([m.group(1) for m in _NVDISASM_LOC.finditer(text)])
    out: list[str] = []
    current: int | None = None
    written: int | None | str = "start"
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.startswith("//##"):
            chain = [(f, int(n)) for f, n in _NVDISASM_LOC.findall(stripped)]
            current = next((n for f, n in chain if f == main), None)
        elif stripped.startswith(".text.") and stripped.endswith(":"):
            if out:
                out.append("")
            out.append(f"        Function : {stripped[len('.text.'):-1]}")
            written, current = "start", None
        elif _SASS_INSTRUCTION.match(line):
            if current != written:
                out.append(f"        //## line {current if current is not None else '-'}")
                written = current
            out.append(line)
        elif _SASS_LABEL.match(stripped):
            out.append(stripped)
    return "\n".join(out)


@dataclass(frozen=True)
class LineMap:
    """A listing as shown (line markers and `.loc` directives removed) and, per shown line, the line of
    the compiled source file it comes from (None for headers, labels, directives and unmapped code)."""

    lines: tuple[str, ...]
    source: tuple[int | None, ...]

    @property
    def mapped(self) -> bool:
        return any(n is not None for n in self.source)


_SASS_COLUMNS = re.compile(r"^\s*(/\*[0-9a-f]{4,}\*/)\s*(@!?\w+)?\s+(.*)$")


def compact_sass(line: str) -> str:
    """An instruction without the tools' wide padding: `/*0080*/   @P1 BRA ...`, guards right-aligned in
    one narrow column so opcodes still line up; headers lose their indent."""
    match = _SASS_COLUMNS.match(line)
    if match:
        address, guard, rest = match.groups()
        return f"{address} {guard or '':>6} {rest}"
    return line.strip() if "Function :" in line else line


def sass_line_map(sass: str) -> LineMap:
    """Shown lines (compacted, markers removed) and the source line of each."""
    lines: list[str] = []
    source: list[int | None] = []
    current: int | None = None
    for line in sass.splitlines():
        marker = _LINE_MARKER.match(line)
        if marker:
            current = None if marker.group(1) == "-" else int(marker.group(1))
            continue
        if "Function :" in line:
            current = None
        lines.append(compact_sass(line))
        source.append(current if _SASS_INSTRUCTION.match(line) else None)
    return LineMap(tuple(lines), tuple(source))


def ptx_line_map(ptx: str) -> LineMap:
    """PTX lines and their source lines from `.loc` directives; the compiled file is the first `.file`
    ending in .cu, else file 1 (cuobjdump's PTX has no `.file` table, and nvcc numbers its input 1)."""
    files = {int(m.group(1)): m.group(2) for m in map(_PTX_FILE.match, ptx.splitlines()) if m}
    main = next((n for n, f in sorted(files.items()) if f.endswith(".cu")), 1)
    lines: list[str] = []
    source: list[int | None] = []
    current: int | None = None
    for line in ptx.splitlines():
        loc = _PTX_LOC.match(line)
        if loc:
            file, number, outer_file, outer_number = loc.groups()
            if int(file) == main:
                current = int(number)
            elif outer_file and int(outer_file) == main:
                current = int(outer_number)
            else:
                current = None
            continue
        if _PTX_FILE.match(line):
            continue
        if _PTX_FUNCTION.match(line):
            current = None
        stripped = line.strip()
        is_code = bool(stripped) and not stripped.startswith((".", "//", "{", "}", "$", "@$")) or \
            stripped.startswith("@%")
        lines.append(line)
        source.append(current if is_code else None)
    return LineMap(tuple(lines), tuple(source))


def _sass(cuobjdump: str, nvdisasm: str, obj: Path, env: dict[str, str], timeout_s: float,
          notes: list[str]) -> str:
    """SASS with line markers from the object's cubins; cuobjdump -sass (no lines) where that fails."""
    with tempfile.TemporaryDirectory(prefix="kw-sass-", dir=obj.parent) as tmp:
        work = Path(tmp)
        policy = confine.build_policy(obj.parent)
        res = sandbox.run([cuobjdump, "-xelf", "all", str(obj.resolve())], work, timeout_s, name="cuobjdump-xelf",
                          policy=policy)
        cubins = sorted(work.glob("*.cubin")) if res.ok else []
        parts = []
        for cubin in cubins:
            dis = sandbox.run([nvdisasm, "-c", "-gi", cubin.name], work, timeout_s, name=f"nvdisasm-{cubin.stem}",
                              output_cap=4 * CAP, policy=policy)
            if not dis.ok:
                parts = []
                break
            parts.append(normalize_nvdisasm(dis.stdout))
        if parts:
            return "\n\n".join(p for p in parts if p)
    res = sandbox.run([cuobjdump, "-sass", obj.name], obj.parent, timeout_s, env_extra=env, name="cuobjdump-sass",
                      output_cap=4 * CAP, policy=confine.build_policy(obj.parent))
    if not res.ok:
        notes.append(f"cuobjdump -sass failed: {res.stderr.strip()[-300:] or res.returncode}")
        return ""
    notes.append("SASS without source lines (nvdisasm could not read the cubin)")
    return clean_sass(res.stdout)


def dump(obj: Path | str, timeout_s: float = 60.0) -> Assembly:
    """PTX and SASS of one object file; never raises."""
    cuobjdump, nvdisasm = tools()
    if cuobjdump is None:
        return Assembly(note="cuobjdump is not installed on this worker: no PTX/SASS listing")
    obj = Path(obj)
    env = {"NVDISASM_PATH": str(Path(nvdisasm).parent)} if nvdisasm else {}
    notes: list[str] = []
    res = sandbox.run([cuobjdump, "-ptx", obj.name], obj.parent, timeout_s, env_extra=env, name="cuobjdump-ptx",
                      output_cap=4 * CAP, policy=confine.build_policy(obj.parent))
    ptx = ""
    if res.ok:
        ptx = _cap(clean_ptx(res.stdout), "PTX", notes)
    else:
        notes.append(f"cuobjdump -ptx failed: {res.stderr.strip()[-300:] or res.returncode}")
    if nvdisasm is None:
        notes.append("nvdisasm is not installed on this worker: no SASS listing")
        sass = ""
    else:
        sass = _cap(_sass(cuobjdump, nvdisasm, obj, env, timeout_s, notes), "SASS", notes)
    return Assembly(ptx, sass, "; ".join(notes))
