"""Static checks on a candidate source, before any build (docs/architecture.md, Security model).

These are a cheap first line against broken or cheating candidates; the
correctness check and the timing protocol remain the real defence. Comments
are removed and string/char literal contents blanked (keeping line numbers)
before scanning, so a rule never fires on prose. Each violation names its
rule: `RULE calls-baseline: line 12 calls vector_add()`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from worker.engine.static import (
    DEVICE_CONTROL,
    SYSTEM,
    SYSTEM_TYPES,
    TIMING,
    StaticReport,
    Violation,
    strip_comments,
)
from worker.formats.cuda.spec import Interface, TaskSpec

# Library -> (include path prefixes, identifier prefixes). A task may allow some via rules.allowed_libraries.
LIBRARIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cublas": (("cublas",), ("cublas",)),
    "cudnn": (("cudnn",), ("cudnn",)),
    "cusparse": (("cusparse",), ("cusparse",)),
    "cufft": (("cufft",), ("cufft",)),
    "curand": (("curand",), ("curand",)),
    "cusolver": (("cusolver",), ("cusolver",)),
    # CUB's headers and its block/warp/thread primitives are header-only device code: always allowed. Its
    # device-wide algorithms (cub::Device*) are the library solving the task for you: a task may allow them.
    "cub": ((), ("cub::Device",)),
    "thrust": (("thrust/",), ("thrust::",)),
    "cutlass": (("cutlass/", "cute/"), ("cutlass::", "cute::")),
}
_IDENT = re.compile(r"[A-Za-z_]\w*")
_NON_FUNCTION_BLOCKS = {"if", "for", "while", "switch", "catch", "do", "else", "try"}
_TYPE_WORDS = {
    "void",
    "char",
    "short",
    "int",
    "long",
    "float",
    "double",
    "signed",
    "unsigned",
    "bool",
    "const",
    "volatile",
    "struct",
    "size_t",
    "half",
    "__half",
    "__nv_bfloat16",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
}
_QUALIFIERS_DROPPED = ("__restrict__", "__restrict", "restrict")


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _matching(text: str, open_pos: int, opening: str = "(", closing: str = ")") -> int:
    depth = 0
    for j in range(open_pos, len(text)):
        if text[j] == opening:
            depth += 1
        elif text[j] == closing:
            depth -= 1
            if depth == 0:
                return j
    return -1


def normalize_param_type(decl: str) -> str:
    """'const float* __restrict__ A' -> 'const float*'; 'const int N' -> 'int';
    'float const *x' -> 'const float*'.

    Top-level const on a by-value parameter does not change the ABI, so it is dropped;
    const on the pointee does, and is kept.
    """
    decl = decl.split("=")[0]
    for q in _QUALIFIERS_DROPPED:
        decl = re.sub(rf"\b{q}\b", " ", decl)
    tokens = re.findall(r"[A-Za-z_]\w*|::|\*|&", decl)
    idents = [t for t in tokens if _IDENT.fullmatch(t)]
    if len(idents) >= 2 and tokens[-1] == idents[-1] and idents[-1] not in _TYPE_WORDS:
        tokens = tokens[:-1]  # drop the parameter name
    stars = [i for i, t in enumerate(tokens) if t in ("*", "&")]
    if stars:
        base, rest = tokens[: stars[0]], tokens[stars[0] :]
        const_base = "const" in base
        base = [t for t in base if t != "const"]
        rest = [t for t in rest if t != "const"]  # const pointer itself (T* const p) is top-level
        text = ("const " if const_base else "") + " ".join(base) + "".join(rest)
    else:
        text = " ".join(t for t in tokens if t not in ("const", "volatile"))
    return text.replace(" ::", "::").replace(":: ", "::")


def _split_params(body: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for j, ch in enumerate(body):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:j])
            start = j + 1
    parts.append(body[start:])
    parts = [p.strip() for p in parts]
    return [] if parts == [""] or parts == ["void"] else parts


def _extern_c_blocks(code: str) -> list[tuple[int, int]]:
    blocks = []
    for m in re.finditer(r'\bextern\s*"C"\s*\{', code):
        end = _matching(code, m.end() - 1, "{", "}")
        blocks.append((m.end(), len(code) if end < 0 else end))
    return blocks


def _compatible(got: tuple[str, ...], want: tuple[str, ...], omittable: int) -> bool:
    """Same ABI as the interface: equal types, where const may be added to a pointee (`float*` ->
    `const float*`, the same pointer), and up to `omittable` trailing parameters of the interface left
    out (extern "C" on x86-64: the caller passes them and cleans up, the callee ignores them)."""
    if not (len(want) - omittable <= len(got) <= len(want)):
        return False
    return all(_same_abi(g, w) for g, w in zip(got, want, strict=False))


def _same_abi(got: str, want: str) -> bool:
    return got == want or (got.endswith(("*", "&")) and got == "const " + want)


def _omittable(iface: Interface, constants: dict[str, float]) -> int:
    """How many trailing by-value parameters the harness fills from [constants]: a candidate may hard-code
    them (the benchmark declares such parameters with a default and calls without them)."""
    n = 0
    for p in reversed(iface.params):
        if p.is_pointer or p.name not in constants:
            break
        n += 1
    return n


def _check_entry_point(code: str, iface: Interface, constants: dict[str, float] | None = None) -> list[Violation]:
    """Exactly one extern "C" definition of the entry point with the interface's ABI; other overloads of the
    name (C++ linkage, other parameter types) are the candidate's own functions and are fine."""
    name = iface.optimized_entry
    want = tuple(normalize_param_type(f"{p.ctype} {p.name}") for p in iface.params)
    omittable = _omittable(iface, constants or {})
    blocks = _extern_c_blocks(code)
    definitions = []
    for m in re.finditer(rf"\b{re.escape(name)}\s*\(", code):
        close = _matching(code, m.end() - 1)
        if close < 0:
            continue
        after = code[close + 1 :].lstrip()
        cut = max(code.rfind(";", 0, m.start()), code.rfind("}", 0, m.start()), code.rfind("{", 0, m.start()))
        prefix = code[cut + 1 : m.start()]
        if not re.search(r"\bvoid\s*$", prefix):
            continue  # a call, not a declaration
        if after.startswith("{"):
            c_linkage = any(a <= m.start() < b for a, b in blocks) or bool(re.search(r'\bextern\s*"C"', prefix))
            raw = _split_params(code[m.end() : close])
            got = tuple(normalize_param_type(p) for p in raw)
            definitions.append((m, c_linkage, got, raw))
    if not definitions:
        return [
            Violation(
                "entry-point",
                0,
                f'no definition of extern "C" void {name}(...) found; '
                f"the interface is: {iface.signature.replace(iface.entry + '(', name + '(', 1)}",
            )
        ]
    matching = [d for d in definitions if d[1] and _compatible(d[2], want, omittable)]
    if len(matching) == 1:
        return []
    if len(matching) > 1:
        second = _line(code, matching[1][0].start())
        return [Violation("entry-point", second, f'extern "C" {name} is defined twice')]
    m, c_linkage, got, raw = next((d for d in definitions if d[1]), definitions[0])
    line = _line(code, m.start())
    if not c_linkage:
        return [Violation("entry-point", line, f'{name} must be declared extern "C": the harness calls it by its '
                          f'C name; write extern "C" before its definition')]
    message = f"{name} has parameter types ({', '.join(got)}), the task requires ({', '.join(want)})"
    return [Violation("entry-point", line, message + _mismatch_advice(got, want, raw))]


def _mismatch_advice(got: tuple[str, ...], want: tuple[str, ...], raw: list[str]) -> str:
    """What to change when the entry point's parameters differ from the interface's: extra trailing parameters
    (a default value among them is the usual cause: it lives at a call site, and the harness's call is compiled
    apart from the candidate, with the task's parameters only), missing ones, or the first that differs."""
    if len(got) > len(want) and _compatible(got[: len(want)], want, 0):
        extra = raw[len(want) :]
        if any("=" in p for p in extra):
            why = f"a default value never reaches the harness's call, compiled apart with the task's {len(want)}"
        else:
            why = f"the harness passes only the task's {len(want)}"
        return f"; {why} parameters: remove `{', '.join(extra)}` and set such values inside the function"
    if len(got) < len(want) and _compatible(got, want[: len(got)], 0):
        return f"; add the missing parameters ({', '.join(want[len(got) :])}) in this order"
    for k, (g, w) in enumerate(zip(got, want, strict=False)):
        if not _same_abi(g, w):
            return f"; parameter {k + 1} must be {w}, not {g}"
    return ""


def _function_headers(code: str) -> list[tuple[int, int, str]]:
    """(body_start, body_end, header) of every brace block that is a function or lambda body.

    A body follows `name(params)` (maybe with trailing const/noexcept/mutable/-> type); a control statement
    (`for (;;) {`, `if (...) {`) is not a function even though its header also ends in `)`."""
    found = []
    for m in re.finditer(r"\{", code):
        start = m.start()
        head = code[:start].rstrip()
        head = re.sub(r"(\s*(->\s*[\w:<>*& ]+|\b(const|noexcept|mutable|override|final|volatile)\b))+$", "", head)
        if not head.endswith(")"):
            continue
        depth, j = 0, len(head) - 1
        while j >= 0:
            depth += head[j] == ")"
            depth -= head[j] == "("
            if depth == 0:
                break
            j -= 1
        if j < 0:
            continue
        before = head[:j].rstrip()
        word = re.search(r"([A-Za-z_]\w*)\s*$", before)
        if word and word.group(1) in _NON_FUNCTION_BLOCKS | {"return", "sizeof", "decltype"}:
            continue
        if not word and not before.endswith("]"):
            continue  # neither a named function nor a lambda
        cut = max(code.rfind(";", 0, j), code.rfind("{", 0, j), code.rfind("}", 0, j))
        header = code[cut + 1 : start]
        end = _matching(code, start, "{", "}")
        found.append((start, len(code) if end < 0 else end, header))
    return found


def _is_device_context(functions: list[tuple[int, int, str]], pos: int) -> bool | None:
    """True when the innermost named function around pos is device-only; None at file scope.

    __host__ __device__ counts as host: its asm would also be compiled for, and run on, the CPU.
    """
    enclosing = [f for f in functions if f[0] < pos < f[1]]
    if not enclosing:
        return None
    for _start, _end, header in sorted(enclosing, key=lambda f: f[0], reverse=True):
        if re.search(r"\b__host__\b", header):
            return False
        if re.search(r"\b(__device__|__global__)\b", header):
            return True
        if not re.search(r"\[[^\]]*\]\s*\(", header):
            return False  # a named host function; lambdas defer to the function around them
    return False


def check_source(
    source: str, spec: TaskSpec, precision: str, baseline_kernels: tuple[str, ...] = ()
) -> StaticReport:
    """Apply every rule to a candidate for (spec, precision); returns all violations found."""
    iface = spec.interfaces[precision]
    no_comments = strip_comments(source, blank_strings=False)
    code = strip_comments(source, blank_strings=True)
    allowed = set(spec.allowed_libraries)
    out: list[Violation] = _check_entry_point(no_comments, iface, spec.constants)

    def add(rule: str, pos: int, message: str, text: str = code) -> None:
        out.append(Violation(rule, _line(text, pos), message))

    def each(pattern: str, text: str = code) -> Iterator[re.Match[str]]:
        return re.finditer(pattern, text)

    # Includes: read the path from the comment-free text (string literals still intact).
    for m in each(r"(?m)^[ \t]*#[ \t]*include\b[ \t]*(.*)$", no_comments):
        target, pos = m.group(1).strip(), m.start()
        path = target.strip("<>").strip()
        if target.startswith('"'):
            add(
                "local-include",
                pos,
                f"#include {target}: local files cannot be included; put everything in the one source file",
                no_comments,
            )
        elif not target.startswith("<"):
            add("local-include", pos, f"#include {target}: only <system> headers are allowed", no_comments)
        elif path.startswith("/") or ".." in path.split("/"):
            add(
                "local-include",
                pos,
                f"#include {target}: absolute or parent paths are not allowed",
                no_comments,
            )
        else:
            for lib, (includes, _symbols) in LIBRARIES.items():
                if lib not in allowed and any(path.startswith(p) for p in includes):
                    add(
                        "forbidden-library",
                        pos,
                        f"#include {target}: {lib} is not allowed for this task",
                        no_comments,
                    )

    for name in sorted({i.entry for i in spec.interfaces.values()} | set(baseline_kernels)):
        for m in each(rf"\b{re.escape(name)}\b"):
            called = code[m.end() :].lstrip().startswith(("(", "<<<"))
            declared = re.search(r"\bvoid\s*$", code[max(0, m.start() - 40) : m.start()])
            verb = "declares" if declared else "calls" if called else "refers to"
            what = f"{verb} {name}()" if called else f"{verb} {name}"
            add("calls-baseline", m.start(), f"{what}; the baseline may not be used by the candidate")

    for m in each(r"\bmain\s*\("):
        add("no-main", m.start(), "defines or calls main(); the harness owns main")

    for name in TIMING:
        for m in each(rf"(?<![\w.>]){re.escape(name)}\s*\("):
            add(
                "timing",
                m.start(),
                f"calls {name}(); timing belongs to the harness "
                "(clock64 for spin loops is refused too, for simplicity)",
            )
    for m in each(r"\bstd\s*::\s*chrono\b|\bchrono\s*::"):
        add("timing", m.start(), "uses std::chrono; timing belongs to the harness")
    for m in each(r"%(globaltimer\w*|clock64|clock)\b", no_comments):
        add("timing", m.start(), f"reads the %{m.group(1)} register in asm", no_comments)

    system_uses = [(name, rf"(?<![\w.>]){re.escape(name)}\s*\(") for name in SYSTEM]
    system_uses += [(name, rf"\bstd\s*::\s*{re.escape(name)}\b") for name in SYSTEM_TYPES]
    for name, pattern in system_uses:
        for m in each(pattern):
            add(
                "system-call",
                m.start(),
                f"uses {name}; the candidate may not touch processes, threads, "
                "files, the environment or the network",
            )
    for name in DEVICE_CONTROL:
        for m in each(rf"\b{re.escape(name)}\s*\("):
            add("device-control", m.start(), f"calls {name}(); the harness owns the device and the profiler")
    for m in each(r"\b(cu[A-Z]\w*)\s*\("):
        if m.group(1).startswith(("cuCtx", "cuDevice", "cuInit", "cuModule", "cuLibrary", "cuProfiler")):
            add("device-control", m.start(), f"calls driver API {m.group(1)}()")

    for lib, (_includes, symbols) in LIBRARIES.items():
        if lib in allowed:
            continue
        for sym in symbols:
            pattern = rf"\b{re.escape(sym)}\w*" if "::" in sym else rf"\b{re.escape(sym)}\w*\s*\("
            for m in each(pattern):
                used = code[m.start() : m.end()].strip("( ")
                add("forbidden-library", m.start(), f"uses {lib} ({used}); not allowed for this task")

    if spec.blocked_symbols:  # the object check sees host names whatever built them; blocked ones are textual
        for m in each(r"##"):
            add(
                "token-pasting",
                m.start(),
                "token pasting (##) is refused in a task that blocks symbols: it can build the blocked names",
            )

    functions = _function_headers(code)
    for m in each(r"\b(asm|__asm__|__asm)\b"):
        context = _is_device_context(functions, m.start())
        if context is not True:
            where = "at file scope" if context is None else "in host code"
            add(
                "host-asm",
                m.start(),
                f"inline assembly {where}; asm is allowed only inside "
                "__device__/__global__ functions (not __host__ __device__)",
            )

    for sym in spec.blocked_symbols:
        for m in each(rf"\b{re.escape(sym)}\b"):
            add("blocked-symbol", m.start(), f"uses {sym}, which this task blocks")

    out.sort(key=lambda v: (v.line, v.rule))
    return StaticReport(tuple(out))


def _kernel_name(code: str, pos: int) -> str:
    """The name declared after `__global__` (skipping launch-bounds style attributes)."""
    skip = {"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__attribute__", "alignas", "__declspec"}
    while True:
        m = re.compile(r"\s*([A-Za-z_]\w*)\s*(\(|<)?").match(code, pos)
        if not m:
            return ""
        word, paren = m.group(1), m.group(2)
        if word in skip and paren == "(":
            close = _matching(code, m.end() - 1)
            if close < 0:
                return ""
            pos = close + 1
            continue
        if paren == "(":
            return word
        pos = m.end() if paren is None else m.end() - 1
        if paren == "<":  # e.g. a template return type; skip to the matching '>'
            depth = 0
            for j in range(pos, len(code)):
                depth += code[j] == "<"
                depth -= code[j] == ">"
                if depth == 0:
                    pos = j + 1
                    break
            else:
                return ""


def baseline_kernel_names(path: Path | str) -> tuple[str, ...]:
    """Kernel names defined in a baseline source: a candidate may not launch them either."""
    code = strip_comments(Path(path).read_text(encoding="utf-8", errors="replace"), blank_strings=True)
    names = {_kernel_name(code, m.end()) for m in re.finditer(r"\b__global__\b", code)}
    return tuple(sorted(n for n in names if n))
