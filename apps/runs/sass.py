"""A Pygments lexer for NVIDIA SASS as cuobjdump and nvdisasm print it, and per-line HTML for the viewer.

Pygments has no SASS lexer; its `gas` lexer marks guards such as `@P0` and constant banks such as
`c[0x0][0x160]` as errors. One instruction reads

    /*00b0*/   @!P1 LDG.E.64.STRONG.GPU R4, desc[UR6][R2.64+0x10] ;

an address comment, an optional guard predicate, the opcode with its dot modifiers, then operands:
registers (R, UR, P, UP, B, SR_*), immediates, constant-bank reads, memory references in brackets,
branch targets in backquotes. Token types reuse Pygments' standard ones so pygments.css colours them.
"""

from __future__ import annotations

from functools import lru_cache
from html import escape

from django.utils.safestring import SafeString, mark_safe
from pygments.lexer import RegexLexer, bygroups, inherit
from pygments.lexers.ptx import PtxLexer as _PygmentsPtxLexer
from pygments.token import (
    STANDARD_TYPES,
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    Text,
    Whitespace,
)

# Register files of sm_70 and later: general (R0-R254, RZ), uniform (UR0-UR62, URZ), predicate (P0-P6, PT),
# uniform predicate (UP0-UP6, UPT) and convergence barrier (B0-B15) registers.
REGISTER = r"(?:UR(?:Z|\d{1,2})|UP(?:T|\d)|R(?:Z|\d{1,3})|P(?:T|\d)|B\d{1,2})\b"
PREDICATE_TOKEN = Keyword.Pseudo
REGISTER_TOKEN = Name.Variable
MODIFIER_TOKEN = Name.Attribute
OPCODE_TOKEN = Keyword
CONSTANT_TOKEN = Name.Constant


class SassLexer(RegexLexer):
    name = "SASS"
    aliases = ["sass"]
    filenames = ["*.sass"]

    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r"(Function)(\s*:\s*)(\S+)", bygroups(Keyword.Declaration, Punctuation, Name.Function)),
            (r"/\*[0-9a-fA-F]+\*/", Comment.Special),  # instruction address
            (r"/\*.*?\*/", Comment.Multiline),
            (r"//.*?$", Comment.Single),
            (r"\.L\w*:", Name.Label),
            (r"@!?" + REGISTER, PREDICATE_TOKEN),
            (r"[A-Z][A-Z0-9_]*", OPCODE_TOKEN, "modifiers"),
            (r"\S+", Text),
        ],
        "modifiers": [
            (r"\.[A-Za-z0-9_]+", MODIFIER_TOKEN),
            (r"", Text, ("#pop", "operands")),
        ],
        "operands": [
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
            (r";", Punctuation, "#pop"),
            (r"/\*.*?\*/", Comment.Multiline),
            (r"`\(", Punctuation, "target"),
            (r"(c)(\[)(0x[0-9a-fA-F]+)(\])(\[)", bygroups(CONSTANT_TOKEN, Punctuation, Number.Hex, Punctuation,
                                                          Punctuation), "address"),
            (r"(desc|gdesc)(\[)", bygroups(Name.Builtin, Punctuation), "address"),
            (r"\[", Punctuation, "address"),
            (r"SR_[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*", Name.Builtin),  # SR_TID.X, SR_CgaCtaId
            (r"(!?)(" + REGISTER + r")((?:\.[A-Za-z0-9_]+)*)", bygroups(Operator, REGISTER_TOKEN, MODIFIER_TOKEN)),
            (r"[-+]?(?:INF|QNAN|NAN)\b", Number.Float),
            (r"[-+]?0x[0-9a-fA-F]+", Number.Hex),
            (r"[-+]?\d+\.\d*(?:e[-+]?\d+)?", Number.Float),
            (r"[-+]?\d+", Number.Integer),
            (r"(\|)((?:\.[A-Za-z0-9_]+)+)", bygroups(Operator, MODIFIER_TOKEN)),  # |R0|.reuse
            (r"[|\-~!]", Operator),
            (r",", Punctuation),
            (r"[A-Za-z_][A-Za-z0-9_.]*", Name.Other),  # e.g. a texture or named barrier
            (r"\S", Text),
        ],
        "address": [
            (r"(?=\n)", Text, "#pop"),  # an unclosed bracket ends with its line
            (r"\]\[", Punctuation),
            (r"\]", Punctuation, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"(" + REGISTER + r")((?:\.[A-Za-z0-9_]+)*)", bygroups(REGISTER_TOKEN, MODIFIER_TOKEN)),
            (r"0x[0-9a-fA-F]+", Number.Hex),
            (r"\d+", Number.Integer),
            (r"[-+]", Operator),
            (r"[^\]\s]", Text),
        ],
        "target": [
            (r"(?=\n)", Text, "#pop"),
            (r"\)", Punctuation, "#pop"),
            (r"[^)\s]+", Name.Label),
        ],
    }


class PtxLexer(_PygmentsPtxLexer):
    """Pygments' PTX lexer, plus guard predicates (`@%p1 bra`, `@!%p2`) and destination pairs (`%r4|%p6`),
    which it marks as errors."""

    tokens = {"root": [(r"@!?%[A-Za-z_][\w$]*", PREDICATE_TOKEN), (r"\|", Operator), inherit]}


_LEXER = SassLexer(stripnl=False, ensurenl=False)
_PTX_LEXER = PtxLexer(stripnl=False, ensurenl=False)


@lru_cache(maxsize=256)
def _css(ttype) -> str:
    """The short CSS class of a token type; none for whitespace (no span needed)."""
    if ttype in Whitespace:
        return ""
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


def highlight_sass(lines: tuple[str, ...] | list[str]) -> list[SafeString]:
    """One HTML fragment per SASS line, with Pygments' short CSS classes."""
    return _highlight(_LEXER, lines)


def highlight_ptx(lines: tuple[str, ...] | list[str]) -> list[SafeString]:
    return _highlight(_PTX_LEXER, lines)


def _highlight(lexer, lines) -> list[SafeString]:
    """Lex the listing once (a lexer per line costs ten times more) and cut the tokens at newlines."""
    out: list[list[str]] = [[]]
    for ttype, value in lexer.get_tokens("\n".join(lines)):
        css = _css(ttype)
        for i, part in enumerate(value.split("\n")):
            if i:
                out.append([])
            if part:
                text = escape(part, quote=False)
                out[-1].append(f'<span class="{css}">{text}</span>' if css else text)
    out = out[:len(lines)] + [[] for _ in range(len(lines) - len(out))]
    return [mark_safe("".join(parts)) for parts in out]  # noqa: S308 - every piece escaped above
