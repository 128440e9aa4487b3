"""PTX and SASS of a compiled object, for the viewer's assembly tab (cuobjdump, no recompile).

`-arch=sm_XX` embeds both the SASS for sm_XX and the PTX for compute_XX in the object's fatbin, so
`cuobjdump -ptx` and `cuobjdump -sass` read them back. cuobjdump needs nvdisasm for SASS; both come
with full CUDA toolkits, and with `make .cuda-libs/.ready` (NVIDIA's wheels) on compiler-only
machines. Without them the build still succeeds: the text stays empty and the reason goes to a note.
"""

from __future__ import annotations

import os
import re
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


def dump(obj: Path | str, timeout_s: float = 60.0) -> Assembly:
    """PTX and SASS of one object file; never raises."""
    cuobjdump, nvdisasm = tools()
    if cuobjdump is None:
        return Assembly(note="cuobjdump is not installed on this worker: no PTX/SASS listing")
    obj = Path(obj)
    env = {"NVDISASM_PATH": str(Path(nvdisasm).parent)} if nvdisasm else {}
    notes: list[str] = []
    listings = {}
    for what in ("ptx", "sass"):
        if what == "sass" and nvdisasm is None:
            notes.append("nvdisasm is not installed on this worker: no SASS listing")
            listings[what] = ""
            continue
        res = sandbox.run([cuobjdump, f"-{what}", obj.name], obj.parent, timeout_s, env_extra=env,
                          name=f"cuobjdump-{what}", output_cap=4 * CAP, policy=confine.build_policy(obj.parent))
        if not res.ok:
            notes.append(f"cuobjdump -{what} failed: {res.stderr.strip()[-300:] or res.returncode}")
            listings[what] = ""
            continue
        text = clean_sass(res.stdout) if what == "sass" else clean_ptx(res.stdout)
        listings[what] = _cap(text, what.upper(), notes)
    return Assembly(listings["ptx"], listings["sass"], "; ".join(notes))
