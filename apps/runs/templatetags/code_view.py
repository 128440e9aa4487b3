"""Template helpers of the code view and the manual-turn editor (templates/runs/_code_view.html)."""

from django import template
from django.utils.html import json_script
from django.utils.safestring import SafeString, mark_safe

from apps.catalog.markup import code_language as _code_language

register = template.Library()


@register.filter
def merge_side(code: str, side: str) -> SafeString:
    """`<script type="application/json" data-side="a|b">` holding `code` as a JSON string, escaped like
    json_script (`<`, `>`, `&` as \\u escapes, so the code cannot close the tag), for frontend/editor.js."""
    if side not in ("a", "b"):
        raise template.TemplateSyntaxError(f"merge_side: side must be a or b, not {side!r}")
    tag = str(json_script(code or ""))
    opening = f'<script type="application/json" data-side="{side}">'
    return mark_safe(tag.replace('<script type="application/json">', opening, 1))  # noqa: S308 - json_script escaped it


@register.filter
def code_language(backend: str) -> str:
    """The editor language of a task backend: cuda or python."""
    return "python" if _code_language(backend or "cuda") == "python" else "cuda"
