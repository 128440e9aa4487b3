"""task.yaml tasks: the anti-cheat checks on a candidate solution file, before any build."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from worker.engine.static_rules import SYSTEM_TYPES, StaticReport, Violation, strip_comments
from worker.formats.make.spec import SOLUTION_SYSTEM_CALLS, MakeTaskSpec

# ---------------------------------------------------------------- anti-cheat


_LITERALS = re.compile(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*')
_PRINTF_SPEC = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|L|z|j|t)?[diouxXeEfFgGaA]")
_INCLUDE = re.compile(r"(?m)^[ \t]*#[ \t]*(include|include_next|import|embed)\b[ \t]*(.*)$")


def check_solution(source: str, spec: MakeTaskSpec) -> StaticReport:
    """The task's anti_cheat patterns plus our own rules, on the source without its comments.

    - blocked-pattern: no `anti_cheat.blocked_patterns` regex may match (each hit with its line);
    - required-pattern: every `anti_cheat.required_patterns` regex must match (a comment does not count);
    - reference-include: the solution may #include (or #embed, .incbin) a file of the task folder only if
      the shipped solution includes it too: the harness, the expert reference and the scorer's data stay
      out; paths with '..' or absolute paths and computed includes are refused outright;
    - harness-output: no string literal may read like the harness's verdict or timing lines (the success
      regex, "Kernel time", "Ref time"): only the harness prints those;
    - system-call: no files, processes, environment or network (SOLUTION_SYSTEM_CALLS).
    The audit after scoring (speedup>10x flags) remains the answer to what static rules cannot see.
    """
    code = strip_comments(source, blank_strings=False)  # string literals intact, for includes and literals
    blanked = strip_comments(source, blank_strings=True)  # for calls: a name inside a string is prose
    out: list[Violation] = []

    def line_of(pos: int) -> int:
        return code.count("\n", 0, pos) + 1

    def text_of(line: int) -> str:
        return code.splitlines()[line - 1].strip()[:120] if code else ""

    for pattern in spec.anti_cheat.blocked_patterns:
        hits = list(re.finditer(pattern, code, re.MULTILINE))
        for m in hits[:5]:
            line = line_of(m.start())
            out.append(Violation("blocked-pattern", line,
                                 f"matches the blocked pattern /{pattern}/: {text_of(line)!r}"))
    for pattern in spec.anti_cheat.required_patterns:
        if not re.search(pattern, code, re.MULTILINE):
            out.append(Violation("required-pattern", 0, f"the required pattern /{pattern}/ is missing "
                                 "(outside comments)"))

    allowed = _included_targets(spec.baseline_source(spec.precision))
    task_files = {p.relative_to(spec.directory).as_posix() for p in spec.source_files(spec.precision)}
    task_names = task_files | {PurePosixPath(f).name for f in task_files}
    for m in _INCLUDE.finditer(code):
        directive, target = m.group(1), m.group(2).strip()
        reason = _include_problem(directive, target, allowed, task_names, spec.runner.solution_file)
        if reason:
            out.append(Violation("reference-include", line_of(m.start()), reason))
    for m in re.finditer(r"\.incbin\b", code):
        out.append(Violation("reference-include", line_of(m.start()),
                             ".incbin pulls a file into the binary; the solution may not embed files"))

    heads = _output_patterns(spec)
    for m in _LITERALS.finditer(code):
        text = "".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(0)))
        filled = _PRINTF_SPEC.sub("1.0", text)
        for what, regex, head in heads:
            if re.search(regex, filled) or (head and head in text):
                out.append(Violation("harness-output", line_of(m.start()),
                                     f"the string {text[:60]!r} looks like the harness's {what} line (/{regex}/): "
                                     "only the harness prints it"))
                break

    for name in SOLUTION_SYSTEM_CALLS:
        for m in re.finditer(rf"(?<![\w.>]){re.escape(name)}\s*\(", blanked):
            out.append(Violation("system-call", line_of(m.start()),
                                 f"calls {name}(); a solution may not touch files, processes, the environment "
                                 "or the network"))
    for name in SYSTEM_TYPES:
        for m in re.finditer(rf"\bstd\s*::\s*{re.escape(name)}\b", blanked):
            out.append(Violation("system-call", line_of(m.start()), f"uses std::{name}"))
    out.sort(key=lambda v: (v.line, v.rule))
    return StaticReport(tuple(out))


def _included_targets(path: Path) -> set[str]:
    """What the shipped solution includes, as written and by file name: the sanctioned interface."""
    try:
        code = strip_comments(path.read_text(encoding="utf-8", errors="replace"), blank_strings=False)
    except OSError:
        return set()
    out: set[str] = set()
    for m in _INCLUDE.finditer(code):
        target = m.group(2).strip()
        if target[:1] in "\"<":
            inner = target[1:].split('"' if target[0] == '"' else ">")[0].strip()
            out |= {inner, PurePosixPath(inner).name}
    return out


def _include_problem(directive: str, target: str, allowed: set[str], task_names: set[str], solution: str) -> str:
    shown = f"#{directive} {target}"
    if target[:1] not in "\"<":
        return f"{shown}: computed includes are not allowed; name the header in quotes or <>"
    inner = target[1:].split('"' if target[0] == '"' else ">")[0].strip()
    parts = PurePosixPath(inner).parts
    if inner.startswith("/") or ".." in parts:
        return f"{shown}: absolute paths and '..' are not allowed; the solution stays inside its folder"
    if directive == "embed":
        return f"{shown}: the solution may not embed files"
    name = PurePosixPath(inner).name
    ours = inner in task_names or name in task_names
    if ours and name != solution and inner not in allowed and name not in allowed:
        return (f"{shown}: {inner} is a file of the task folder that the shipped solution does not include; "
                "the harness and the expert reference stay out of the solution")
    return ""


def _literal_head(regex: str) -> str:
    """The plain text a regex starts with ('Kernel time:' of 'Kernel time:\\s*([0-9.]+)'), '' if short."""
    text = re.sub(r"^(\^|\\A)", "", regex)
    head = re.match(r"[^\\.^$*+?{}\[\]|()]*", text)
    value = head.group(0) if head else ""
    if len(text) > len(value) and text[len(value)] in "*?{" and value:
        value = value[:-1]  # the last character is optional or repeated
    return value.strip() if len(value.strip()) >= 4 else ""


def _output_patterns(spec: MakeTaskSpec) -> list[tuple[str, str, str]]:
    out = []
    if spec.execute.success.stdout_regex:
        out.append(("success", spec.execute.success.stdout_regex, _literal_head(spec.execute.success.stdout_regex)))
    for what, regex in (("kernel time", spec.performance.parser.kernel_time_ms_regex),
                        ("reference time", spec.performance.parser.ref_time_ms_regex)):
        if regex:
            out.append((what, regex, _literal_head(regex)))
    return out
