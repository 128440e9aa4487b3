"""Task descriptions: Markdown with `$math$`, rendered on the server and sanitized.

Math is cut out before Markdown sees it (so `_` and `*` inside formulas are not emphasis), turned into
readable text (Greek letters and operators as Unicode, sub- and superscripts as <sub>/<sup>) inside
`<span class="math">`, and put back; then nh3 sanitizes the whole fragment, so neither the Markdown,
raw HTML in it, nor the math can carry a script, an event handler or a `javascript:` link. No MathML,
no KaTeX, nothing from a CDN.
"""

from __future__ import annotations

import html
import re
import secrets

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer, PythonLexer

from worker import registry

TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "b", "i", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "sub", "sup", "span", "del", "kbd",
}
ATTRIBUTES = {"a": {"href", "title"}, "span": {"title"}, "th": {"align"}, "td": {"align"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}

# Code first, so a `$` inside code stays code; then display math, then inline math.
_TOKENS = re.compile(
    r"(?P<fence>^(?P<ticks>```|~~~).*?^(?P=ticks)[ \t]*$)"
    r"|(?P<code>(?P<bt>`+).+?(?P=bt))"
    r"|(?P<escaped>\\\$)"
    r"|\$\$(?P<display>.+?)\$\$"
    r"|(?<![\w$])\$(?P<inline>[^\s$](?:[^$\n]*?[^\s$\\])?)\$(?!\d)",
    re.S | re.M,
)

_SYMBOLS = {
    "sum": "Σ", "prod": "Π", "int": "∫", "cdot": "·", "times": "×", "div": "÷", "pm": "±", "mp": "∓",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "sim": "~",
    "equiv": "≡", "infty": "∞", "in": "∈", "notin": "∉", "subset": "⊂", "cup": "∪", "cap": "∩",
    "to": "→", "rightarrow": "→", "leftarrow": "←", "Rightarrow": "⇒", "mapsto": "↦",
    "ldots": "…", "cdots": "⋯", "dots": "…", "vdots": "⋮", "partial": "∂", "nabla": "∇", "forall": "∀",
    "exists": "∃", "odot": "⊙", "otimes": "⊗", "oplus": "⊕", "circ": "∘", "ast": "∗", "star": "⋆",
    "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "langle": "⟨", "rangle": "⟩",
    "|": "‖", "mid": "|", "\\": " ", "%": "%", "_": "_", "#": "#", "&": "&",
    ",": " ", ";": " ", ":": " ", "!": "", " ": " ", "quad": "  ", "qquad": "    ",
    "left": "", "right": "", "big": "", "Big": "", "bigg": "", "Bigg": "", "displaystyle": "",
}
_GREEK = (
    "alpha α beta β gamma γ delta δ epsilon ε varepsilon ε zeta ζ eta η theta θ iota ι kappa κ lambda λ mu μ "
    "nu ν xi ξ pi π rho ρ sigma σ tau τ upsilon υ phi φ varphi φ chi χ psi ψ omega ω Gamma Γ Delta Δ Theta Θ "
    "Lambda Λ Xi Ξ Pi Π Sigma Σ Phi Φ Psi Ψ Omega Ω"
).split()
_SYMBOLS.update(zip(_GREEK[::2], _GREEK[1::2], strict=True))
_WRAPPERS = re.compile(
    r"\\(?:mathrm|text|textrm|mathbf|mathit|mathsf|mathtt|operatorname|boldsymbol|mathcal)\s*\{([^{}]*)\}"
)
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_SQRT = re.compile(r"\\sqrt\s*\{([^{}]*)\}")
_COMMAND = re.compile(r"\\([A-Za-z]+|.)")
_SCRIPT_GROUP = re.compile(r"(?<!\\)([_^])\{([^{}]*)\}")  # not \_ (a literal underscore)
_SCRIPT_ONE = re.compile(r"(?<!\\)([_^])(\\[A-Za-z]+|[^\s{}\\])")


_OPEN = {"_": "\x03", "^": "\x05"}
_CLOSE = {"_": "\x04", "^": "\x06"}
_TAGS = {"\x03": "<sub>", "\x04": "</sub>", "\x05": "<sup>", "\x06": "</sup>"}


def _script(m: re.Match) -> str:
    return f"{_OPEN[m.group(1)]}{m.group(2)}{_CLOSE[m.group(1)]}"


def tex_to_html(tex: str) -> str:
    """Readable text for a TeX formula: `\\sum_{k=0}^{K-1} A_{ik}` -> `Σ<sub>k=0</sub><sup>K-1</sup> A<sub>ik</sub>`.

    Groups are resolved innermost first (a fraction whose numerator has subscripts works); the result
    is escaped text plus <sub>/<sup> tags only.
    """
    # Literal braces (\\{ \\}) become placeholders so that stripping group braces leaves them.
    text = re.sub(r"[\x00-\x08]", "", tex).replace("\\{", "\x01").replace("\\}", "\x02")
    text = _SCRIPT_ONE.sub(lambda m: f"{m.group(1)}{{{m.group(2)}}}", text)  # x_i -> x_{i}
    for _ in range(30):  # bounded: each pass removes at least one innermost group
        before = text
        text = _WRAPPERS.sub("\x07\\1\x07", text)  # \x07: ends a command name that the text would extend
        text = _FRAC.sub(r"(\1)/(\2)", text)
        text = _SQRT.sub(r"√(\1)", text)
        text = _SCRIPT_GROUP.sub(_script, text)
        if text == before:
            break
    parts: list[str] = []
    pos = 0
    for m in _COMMAND.finditer(text):
        parts.append(text[pos : m.start()])
        parts.append(_SYMBOLS.get(m.group(1), m.group(1)))
        pos = m.end()
    parts.append(text[pos:])
    text = html.escape("".join(parts), quote=True).replace("{", "").replace("}", "")
    text = text.replace("\x01", "{").replace("\x02", "}").replace("\x07", "")
    for sentinel, tag in _TAGS.items():
        text = text.replace(sentinel, tag)
    return re.sub(r"\s+", " ", text).strip()


def render_markdown(source: str) -> SafeString:
    """Markdown with `$inline$` and `$$display$$` math, as sanitized HTML."""
    nonce = secrets.token_hex(4)
    maths: list[str] = []

    def cut(m: re.Match) -> str:
        if m.group("fence") or m.group("code"):
            return m.group(0)
        if m.group("escaped"):
            return "&#36;"
        display = m.group("display") is not None
        tex = m.group("display") if display else m.group("inline")
        css = "math display" if display else "math"
        maths.append(f'<span class="{css}" title="{html.escape(tex.strip(), quote=True)}">{tex_to_html(tex)}</span>')
        return f"kwmath{nonce}x{len(maths) - 1}x"

    text = _TOKENS.sub(cut, source or "")
    rendered = markdown.markdown(text, extensions=["fenced_code", "tables", "sane_lists"], output_format="html")
    rendered = re.sub(rf"kwmath{nonce}x(\d+)x", lambda m: maths[int(m.group(1))], rendered)
    clean = nh3.clean(
        rendered,
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        clean_content_tags={"script", "style"},
        allowed_classes={"span": {"math", "display"}},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)  # noqa: S308 - sanitized by nh3 just above


CODE_CSS_CLASS = "task-code"


def code_formatter() -> HtmlFormatter:
    """The one formatter for task sources; static/css/catalog.css holds its `get_style_defs` output."""
    return HtmlFormatter(linenos="table", cssclass=CODE_CSS_CLASS, lineanchors="L", anchorlinenos=True, wrapcode=True)


def code_language(backend: str) -> str:
    """The lexer of a task's code, as its format (worker.registry) says; CUDA for a format not known here."""
    try:
        return registry.get(backend).language
    except ValueError:
        return "cuda"


def highlight_source(code: str, language: str = "cuda") -> SafeString:
    """CUDA (or, for KernelBench tasks, Python) source as Pygments HTML with line numbers; every token is
    escaped by the formatter."""
    lexer = PythonLexer() if language == "python" else CudaLexer()
    return mark_safe(highlight(code, lexer, code_formatter()))  # noqa: S308 - Pygments escapes the code
