"""Getting the code (Coder agent) and the nvcc command (Compiler agent) out of a model's answer.

Models wrap code in prose, emit several blocks (the original, a draft, the final file), forget the
fence, use `~~~` or odd language tags, or run out of tokens half-way through. The rules, in order:

1. Fenced blocks (``` or ~~~, any tag): take the block that defines the required
   `extern "C" void <entry>_optimized(`; when several do, the last one (models revise as they go).
2. If none does, the largest C/CUDA block (tag cuda, cu, c++, cpp, c, ..., or untagged code);
   the static checks then report the missing entry point precisely.
3. No fence at all: the answer itself, trimmed of surrounding prose, if it looks like C/CUDA
   (`__global__` or `extern "C"`).
4. Code that was cut off (an unclosed fence, finish_reason "length", unbalanced braces) or is
   empty is refused with a reason the Debug agent and the viewer can show.

`<think>...</think>` reasoning that some models emit is ignored.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

C_LANGS = frozenset({"cuda", "cu", "cuh", "c++", "cpp", "cxx", "cc", "c", "h", "hpp", "hxx"})
_C_FILE = re.compile(r"\.(cu|cuh|cpp|cxx|cc|c|h|hpp)$")
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*)$")
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_CODE_START = re.compile(
    r"^\s*(#\s*(include|define|pragma|if|ifdef|ifndef)\b|//|/\*|__global__|__device__|__host__|__forceinline__"
    r"|extern\s*\"C\"|template\s*<|static\b|struct\b|typedef\b|using\b|namespace\b|constexpr\b|const\b|inline\b"
    r"|void\b|int\b|float\b|#\s*endif)"
)
_CUT_OFF = "the model's answer was cut off (max tokens) inside the code block"


@dataclass(frozen=True)
class Extraction:
    code: str | None  # None: nothing usable; `reason` says why
    reason: str  # which block was taken and why, or why none could be
    defines_entry: bool = False  # the code defines `extern "C" void <entry>_optimized(`

    @property
    def ok(self) -> bool:
        return self.code is not None


@dataclass(frozen=True)
class CommandExtraction:
    command: str | None
    reason: str

    @property
    def ok(self) -> bool:
        return self.command is not None


@dataclass(frozen=True)
class Block:
    lang: str  # normalized tag: "cuda", "cpp", "" (none), "bash", ...
    code: str
    closed: bool  # False: the answer ended before the closing fence
    number: int  # 1-based position among the answer's blocks


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _THINK.sub("", text)


def _lang(info: str) -> str:
    word = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    word = word.strip("{}.").lower()
    if word.startswith("language-"):
        word = word[len("language-"):]
    return word


def fenced_blocks(text: str) -> list[Block]:
    """Every ```/~~~ block in order. A block closes at a line of the same fence character at least as
    long as its opener (CommonMark); an unclosed block runs to the end and is marked so."""
    lines = _clean(text).split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opener = _FENCE_OPEN.match(lines[i])
        if not opener or (opener["fence"][0] == "`" and "`" in opener["info"]):
            i += 1
            continue
        fence = opener["fence"]
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            if close.match(lines[i]):
                closed = True
                i += 1
                break
            body.append(lines[i])
            i += 1
        code = textwrap.dedent("\n".join(body)).strip("\n")
        blocks.append(Block(_lang(opener["info"]), code, closed, len(blocks) + 1))
    return blocks


def _scan(code: str) -> tuple[str, int]:
    """(code with comments blanked out, '{' count minus '}' count outside comments, strings and chars)."""
    out: list[str] = []
    depth = 0
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        two = code[i : i + 2]
        if two == "//":
            end = code.find("\n", i)
            end = n if end == -1 else end
            out.append(" " * (end - i))
            i = end
        elif two == "/*":
            end = code.find("*/", i + 2)
            end = n if end == -1 else end + 2
            out.append(re.sub(r"[^\n]", " ", code[i:end]))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and code[j] != c and code[j] != "\n":
                j += 2 if code[j] == "\\" else 1
            out.append(code[i : j + 1])
            i = j + 1
        else:
            depth += (c == "{") - (c == "}")
            out.append(c)
            i += 1
    return "".join(out), depth


def brace_balance(code: str) -> int:
    """Opening minus closing braces, ignoring comments and literals: > 0 means the code stops early."""
    return _scan(code)[1]


def optimized_name(entry: str) -> str:
    """`vector_add` -> `vector_add_optimized` (an already suffixed name is kept)."""
    return entry if entry.endswith("_optimized") else f"{entry}_optimized"


def defines_entry(code: str, entry: str) -> bool:
    """Whether `code` defines (with a body, outside comments) `extern "C" void <entry>_optimized(...)`."""
    name = re.escape(optimized_name(entry))
    text = _scan(code)[0]
    pattern = re.compile(rf'extern\s*"C"\s*(?:\{{\s*)?(?:__host__\s+)?void\s+{name}\s*\(')
    for match in pattern.finditer(text):
        depth, j = 1, match.end()
        while j < len(text) and depth:
            depth += (text[j] == "(") - (text[j] == ")")
            j += 1
        if depth == 0 and text[j:].lstrip().startswith("{"):
            return True
    return False


def looks_like_cuda(text: str) -> bool:
    return "__global__" in text or re.search(r'extern\s*"C"', text) is not None


def _is_c_like(block: Block) -> bool:
    if block.lang in C_LANGS or _C_FILE.search(block.lang):
        return True
    return block.lang == "" and (looks_like_cuda(block.code) or "#include" in block.code)


def _trim_prose(text: str) -> tuple[str, bool]:
    """The span from the first line that starts code to the last line that ends a statement or block."""
    lines = text.strip("\n").split("\n")
    start = next((i for i, line in enumerate(lines) if _CODE_START.match(line)), 0)
    end = next(
        (i for i in range(len(lines) - 1, start - 1, -1) if re.search(r"([;{}]|#\s*endif)\s*$", lines[i].rstrip())),
        len(lines) - 1,
    )
    trimmed = "\n".join(lines[start : end + 1]).strip("\n")
    return trimmed, (start, end) != (0, len(lines) - 1)


def _check_complete(code: str, closed: bool, finish_reason: str | None) -> str:
    """'' if the code looks whole, else why not."""
    length = finish_reason == "length"
    if not closed:
        return _CUT_OFF if length else "the code block is never closed: the answer ends inside it (truncated?)"
    balance = brace_balance(code)
    if balance:
        if balance > 0:
            detail, looks = f"{balance} more '{{' than '}}'", "it looks truncated"
        else:
            detail, looks = f"{-balance} more '}}' than '{{'", "it looks malformed"
        if length:
            return f"{_CUT_OFF} (braces unbalanced: {detail})"
        return f"the code's braces are unbalanced ({detail}): {looks}"
    return ""


def extract_code(text: str | None, entry: str, finish_reason: str | None = None) -> Extraction:
    """The Coder's CUDA file out of its answer. `entry` is the task's entry point (e.g. `vector_add`);
    the code must define `extern "C" void <entry>_optimized(`. `finish_reason` is the API's."""
    if text is None or not text.strip():
        return Extraction(None, "the model's answer was empty")
    text = _clean(text)
    if not text.strip():
        return Extraction(None, "the model's answer held only reasoning (<think>) and no code")
    name = optimized_name(entry)
    wanted = f'extern "C" void {name}('
    after_limit = " (the answer hit max tokens after the code block)" if finish_reason == "length" else ""
    blocks = fenced_blocks(text)

    if not blocks:
        if not looks_like_cuda(text):
            if finish_reason == "length":
                return Extraction(None, "the model's answer was cut off (max tokens) before any code")
            return Extraction(None, "the answer has no code block and no CUDA code (__global__ or extern \"C\")")
        code, trimmed = _trim_prose(text)
        if finish_reason == "length":
            return Extraction(None, "the model's answer was cut off (max tokens) in unfenced code")
        problem = _check_complete(code, True, finish_reason)
        if problem:
            return Extraction(None, problem)
        prose = ", prose around it dropped" if trimmed else ""
        found = defines_entry(code, name)
        note = "" if found else f"; it does not define {wanted}"
        return Extraction(code, f"no fenced block: took the answer's text as code{prose}{note}", found)

    n = len(blocks)
    defining = [b for b in blocks if defines_entry(b.code, name)]
    if defining:
        chosen = defining[-1]
        several = f" (the last of {len(defining)} that do)" if len(defining) > 1 else ""
        reason = f"block {chosen.number} of {n} defines {wanted}{several}"
    else:
        c_like = [b for b in blocks if _is_c_like(b)]
        if not c_like:
            if not blocks[-1].closed and finish_reason == "length":
                return Extraction(None, _CUT_OFF)
            tags = ", ".join(sorted({b.lang or "untagged" for b in blocks}))
            return Extraction(None, f"the answer has {n} code block(s) ({tags}) but none holds CUDA/C++ code")
        chosen = max(c_like, key=lambda b: len(b.code))
        reason = f"no block defines {wanted}; took the largest C/CUDA block ({chosen.number} of {n})"

    last = blocks[-1]
    if last is not chosen and not last.closed and _is_c_like(last):
        # A later block was being written when the answer stopped: the model had not finished.
        why = _CUT_OFF if finish_reason == "length" else "the last code block is never closed (truncated?)"
        return Extraction(None, f"{why}; an earlier block was complete but the answer was not")
    if not chosen.code.strip():
        cut = not chosen.closed and finish_reason == "length"
        return Extraction(None, _CUT_OFF if cut else "the code block is empty")
    problem = _check_complete(chosen.code, chosen.closed, finish_reason)
    if problem:
        return Extraction(None, problem)
    return Extraction(chosen.code, reason + after_limit, bool(defining))


_NVCC_LINE = re.compile(r"^(?:\$\s*|>\s*)?`*\s*((?:\S*/)?nvcc(?:\s.*)?)$")
_CHAIN = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")


def _finish_command(lines: list[str], i: int, match: re.Match[str], where: str) -> CommandExtraction:
    command = match.group(1)
    joined = False
    while command.rstrip().endswith("\\") and i + 1 < len(lines):
        i += 1
        command = command.rstrip()[:-1].rstrip() + " " + lines[i].strip()
        joined = True
    command = command.strip().strip("`").strip()
    notes = [f"the first line starting with nvcc {where}"]
    if joined:
        notes.append("joined its backslash-continued lines")
    parts = _CHAIN.split(command, maxsplit=1)
    if len(parts) > 1:
        command = parts[0].strip()
        notes.append("dropped what followed a shell operator (the command is never run by a shell)")
    return CommandExtraction(" ".join(command.split()), "; ".join(notes))


def extract_command(text: str | None) -> CommandExtraction:
    """One single-line `nvcc ...` command from the Compiler agent's answer: the first line starting with
    nvcc inside a code block, else in the prose, else an inline `nvcc ...` code span."""
    if text is None or not text.strip():
        return CommandExtraction(None, "the model's answer was empty")
    text = _clean(text)
    for block in fenced_blocks(text):
        lines = block.code.split("\n")
        for i, line in enumerate(lines):
            if match := _NVCC_LINE.match(line.strip()):
                return _finish_command(lines, i, match, f"in code block {block.number}")
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if match := _NVCC_LINE.match(line.strip()):
            return _finish_command(lines, i, match, "in the answer")
    for span in re.findall(r"`([^`\n]+)`", text):
        if re.match(r"^(?:\S*/)?nvcc\s", span.strip()):
            return CommandExtraction(" ".join(span.split()), "an inline `nvcc ...` code span in the prose")
    return CommandExtraction(None, "the answer has no nvcc command (no line starting with nvcc)")


# ---------------------------------------------------------------- the other task formats

PY_LANGS = frozenset({"python", "py", "python3", "py3"})


def _is_python(block: Block) -> bool:
    return block.lang in PY_LANGS or block.lang.endswith(".py") or (
        block.lang == "" and re.search(r"^\s*(import |from \S+ import |class |def )", block.code, re.M) is not None)


def _defines_class(code: str, class_name: str) -> bool:
    return re.search(rf"^class\s+{re.escape(class_name)}\s*[(:]", code, re.M) is not None


def extract_python_module(
    text: str | None, class_name: str = "ModelNew", finish_reason: str | None = None
) -> Extraction:
    """The Coder's Python file for a KernelBench task (a module defining `class ModelNew`): the last fenced
    block that defines the class, else the largest Python block, else an unfenced answer that defines it.
    Truncated answers are refused like C code; syntax is left to the static checks, which name the line."""
    if text is None or not text.strip():
        return Extraction(None, "the model's answer was empty")
    text = _clean(text)
    wanted = f"class {class_name}"
    blocks = fenced_blocks(text)
    if not blocks:
        if finish_reason == "length":
            return Extraction(None, "the model's answer was cut off (max tokens) in unfenced code")
        if not _defines_class(text, class_name):
            return Extraction(None, f"the answer has no code block and does not define {wanted}")
        lines = text.strip("\n").split("\n")
        first = re.compile(r"^(import |from |class |def |[A-Za-z_]\w* =)")
        start = next(i for i, line in enumerate(lines) if first.match(line))
        return Extraction("\n".join(lines[start:]).strip("\n"), "no fenced block: took the answer's code", True)
    n = len(blocks)
    defining = [b for b in blocks if _defines_class(b.code, class_name)]
    if defining:
        chosen = defining[-1]
        several = f" (the last of {len(defining)} that do)" if len(defining) > 1 else ""
        reason = f"block {chosen.number} of {n} defines {wanted}{several}"
    else:
        python = [b for b in blocks if _is_python(b)]
        if not python:
            if not blocks[-1].closed and finish_reason == "length":
                return Extraction(None, _CUT_OFF)
            return Extraction(None, f"the answer has {n} code block(s) but none holds Python code defining {wanted}")
        chosen = max(python, key=lambda b: len(b.code))
        reason = f"no block defines {wanted}; took the largest Python block ({chosen.number} of {n})"
    if not chosen.closed:
        return Extraction(None, _CUT_OFF if finish_reason == "length" else
                          "the code block is never closed: the answer ends inside it (truncated?)")
    if not chosen.code.strip():
        return Extraction(None, "the code block is empty")
    return Extraction(chosen.code, reason, bool(defining))


def extract_source_file(text: str | None, file_name: str, finish_reason: str | None = None) -> Extraction:
    """The Coder's replacement for a task.yaml task's solution file (C/C++/CUDA): the last fenced C-like
    block (a block tagged with the file's name wins), else the unfenced answer if it looks like C/CUDA."""
    if text is None or not text.strip():
        return Extraction(None, "the model's answer was empty")
    text = _clean(text)
    blocks = fenced_blocks(text)
    if not blocks:
        if finish_reason == "length":
            return Extraction(None, "the model's answer was cut off (max tokens) in unfenced code")
        if not (looks_like_cuda(text) or "#include" in text):
            return Extraction(None, f"the answer has no code block and no C/CUDA code for {file_name}")
        code, _ = _trim_prose(text)
        problem = _check_complete(code, True, finish_reason)
        if problem:
            return Extraction(None, problem)
        return Extraction(code, "no fenced block: took the answer's code", True)
    named = [b for b in blocks if file_name.lower() in b.lang]
    c_like = named or [b for b in blocks if _is_c_like(b)]
    if not c_like:
        return Extraction(None, f"the answer has {len(blocks)} code block(s), none with C/CUDA code for {file_name}")
    chosen = c_like[-1]
    if not chosen.code.strip():
        return Extraction(None, "the code block is empty")
    problem = _check_complete(chosen.code, chosen.closed, finish_reason)
    if problem:
        return Extraction(None, problem)
    return Extraction(chosen.code, f"block {chosen.number} of {len(blocks)}: the last C/CUDA block", True)
