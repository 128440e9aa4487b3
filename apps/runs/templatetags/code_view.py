"""Template helpers of the code view and the manual-turn editor (templates/runs/_code_view.html)."""

import json

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from apps.catalog.markup import code_language as _code_language

register = template.Library()


@register.filter
def merge_side(code: str, side: str) -> SafeString:
    """`<template data-side="a|b">` holding `code` as escaped text, for frontend/editor.js.

    A <template>, not a JSON <script>: htmx drops every <script> of a swapped fragment (allowScriptTags is
    off under the CSP), and a template's content is inert text the browser neither shows nor runs."""
    if side not in ("a", "b"):
        raise template.TemplateSyntaxError(f"merge_side: side must be a or b, not {side!r}")
    return format_html('<template data-side="{}">{}</template>', side, code or "")


@register.filter
def as_json(value) -> str:
    """JSON text for a data attribute (autoescaping makes it attribute-safe), e.g. data-diagnostics."""
    return json.dumps(value, separators=(",", ":"))


@register.filter
def code_language(backend: str) -> str:
    """The editor language of a task backend: cuda or python."""
    return "python" if _code_language(backend or "cuda") == "python" else "cuda"
