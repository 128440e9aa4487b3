"""Code for the browser: Pygments highlighting per line and a side-by-side diff, rendered on the server.

Pages that only display work without JavaScript, so the diff is computed here (difflib) and each
line is highlighted on its own (a comment spanning lines is split into per-line spans), which lets a
template mark changed lines, give every line an anchor and link compiler errors to it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES

CONTEXT = 4  # unchanged lines kept around each change before a run of equal lines is folded


@lru_cache(maxsize=4)
def _lexer(language: str = "cuda") -> Lexer:
    return get_lexer_by_name(language, stripnl=False, ensurenl=False)


def _css_class(ttype) -> str:
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


def highlight_lines(code: str, language: str = "cuda") -> list[SafeString]:
    """One HTML fragment per source line, with Pygments' short CSS classes (`k`, `c1`, `mi`...).

    language: a Pygments lexer name (`cuda`, `ptx`, `gas` for SASS, which has no lexer of its own)."""
    lines: list[list[str]] = [[]]
    for ttype, value in _lexer(language).get_tokens(code):
        css = _css_class(ttype)
        for i, part in enumerate(value.split("\n")):
            if i:
                lines.append([])
            if part:
                lines[-1].append(f'<span class="{css}">{escape(part)}</span>' if css else escape(part))
    if code.endswith("\n") and lines and not lines[-1]:
        lines.pop()
    return [mark_safe("".join(parts)) for parts in lines]  # noqa: S308 - every piece escaped above


@dataclass(frozen=True)
class DiffRow:
    """One row of a side-by-side diff; `kind` is equal, replace, delete, insert or fold."""

    kind: str
    left_no: int | None = None
    left: SafeString | str = ""
    right_no: int | None = None
    right: SafeString | str = ""
    folded: int = 0  # for kind "fold": how many equal lines are hidden


@dataclass(frozen=True)
class SideBySide:
    rows: list[DiffRow]
    added: int
    removed: int
    # the two codes as they are, for the browser's merge view (frontend/editor.js) over these rows
    left_text: str = ""
    right_text: str = ""
    language: str = "cuda"

    @property
    def identical(self) -> bool:
        return self.added == 0 and self.removed == 0


def side_by_side(left: str, right: str, *, context: int = CONTEXT, language: str = "cuda") -> SideBySide:
    """Rows pairing `left` and `right` line by line, long unchanged stretches folded."""
    a, b = left.splitlines(), right.splitlines()
    ha, hb = highlight_lines(left, language), highlight_lines(right, language)
    rows: list[DiffRow] = []
    added = removed = 0
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    opcodes = matcher.get_opcodes()
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            keep_head = context if index > 0 else 0
            keep_tail = context if index < len(opcodes) - 1 else 0
            length = i2 - i1
            if length > keep_head + keep_tail + 1:
                spans = [(0, keep_head), (length - keep_tail, length)]
                folded = length - keep_head - keep_tail
            else:
                spans, folded = [(0, length)], 0
            for n, (start, stop) in enumerate(spans):
                if n == 1 and folded:
                    rows.append(DiffRow("fold", folded=folded))
                for k in range(start, stop):
                    rows.append(DiffRow("equal", i1 + k + 1, ha[i1 + k], j1 + k + 1, hb[j1 + k]))
            continue
        removed += i2 - i1
        added += j2 - j1
        for k in range(max(i2 - i1, j2 - j1)):
            li, rj = i1 + k, j1 + k
            has_left, has_right = li < i2, rj < j2
            kind = "replace" if has_left and has_right else ("delete" if has_left else "insert")
            rows.append(DiffRow(
                kind,
                li + 1 if li < i2 else None, ha[li] if li < i2 else "",
                rj + 1 if rj < j2 else None, hb[rj] if rj < j2 else "",
            ))
    return SideBySide(rows, added, removed, left, right, "python" if language == "python" else "cuda")


# nvcc (EDG front end): `kernel.cu(12): error: ...`, `kernel.cu(3): warning #177-D: ...`,
# `kernel.cu(9): catastrophic error: ...`; host compiler (gcc/clang): `kernel.cu:12:5: error: ...`.
_LOG_LINE = re.compile(
    r"^(?P<file>[\w./+-]+\.(?:cu|cuh|h|hpp|cpp))\((?P<line>\d+)\): (?:catastrophic )?(?P<level>error|warning)"
    r"(?: #[\w-]+)?:?\s*(?P<message>.*)$|"
    r"^(?P<file2>[\w./+-]+\.(?:cu|cuh|h|hpp|cpp)):(?P<line2>\d+):(?:\d+:)? (?:fatal )?(?P<level2>error|warning):?"
    r"\s*(?P<message2>.*)$")


@dataclass(frozen=True)
class LogLine:
    text: str
    line: int | None = None  # the candidate's source line it points at, if any
    level: str = ""  # error | warning | ""


@dataclass(frozen=True)
class Diagnostic:
    """A compiler message pinned to a line of the candidate (the editor shows it as a lint marker)."""

    line: int
    severity: str  # error | warning
    message: str

    def as_json(self) -> dict:
        return {"line": self.line, "severity": self.severity, "message": self.message}


def compile_diagnostics(log: str, *, source_name: str | None = None) -> list[Diagnostic]:
    """The `file(line): error: message` lines of an nvcc log, in order, without repeats.

    Only messages about a `.cu` file (or `source_name`, when given) are kept: an error inside a
    system header points at a line that is not in the candidate."""
    found: list[Diagnostic] = []
    seen = set()
    for text in (log or "").splitlines():
        match = _LOG_LINE.match(text.strip())
        if not match:
            continue
        name = match.group("file") or match.group("file2")
        if source_name is not None:
            if name.rsplit("/", 1)[-1] != source_name:
                continue
        elif not name.endswith(".cu"):
            continue
        diagnostic = Diagnostic(int(match.group("line") or match.group("line2")),
                                match.group("level") or match.group("level2"),
                                (match.group("message") or match.group("message2") or "").strip())
        if diagnostic not in seen:
            seen.add(diagnostic)
            found.append(diagnostic)
    return found


def compile_log_lines(log: str) -> list[LogLine]:
    """Split an nvcc log into lines and find the `file.cu(12): error` (or `file.cu:12:`) references."""
    out = []
    for text in log.splitlines():
        match = _LOG_LINE.match(text.strip())
        if match and (match.group("file") or match.group("file2")).endswith(".cu"):  # not a system header's line
            line = match.group("line") or match.group("line2")
            level = match.group("level") or match.group("level2")
            out.append(LogLine(text, int(line), level))
        else:
            out.append(LogLine(text))
    return out
