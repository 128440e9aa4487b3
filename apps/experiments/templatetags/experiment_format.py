"""Number formats for the experiment tables: a page shows the same cells as the CSV, only rounded."""

import math

from django import template

register = template.Library()

# Columns and ablation rows whose values are fractions of the trials, shown as percentages on the page.
RATE_COLUMNS = frozenset({"rate", "fast_p"})
RATE_ROW_PREFIXES = ("success P>", "fast_")


def _number(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}" if value != int(value) or abs(value) >= 1e6 else f"{value:g}"
    return str(value)


@register.filter
def cell(value, column: str = "") -> str:
    """A table cell: '—' for none, percentages for rate columns, 4 significant digits for other numbers."""
    if value is None or value == "":
        return "—"
    if column in RATE_COLUMNS and isinstance(value, int | float) and not isinstance(value, bool):
        return pct(value)
    if column.endswith("speedups") and isinstance(value, str):
        # Per-size speedups, ';'-separated in the CSV: 3 significant digits each, so the row fits the page.
        return " · ".join(_speedup(part) for part in value.split(";"))
    return _number(value)


def _speedup(text: str) -> str:
    try:
        return f"{float(text):.3g}"
    except ValueError:
        return "—"


@register.filter
def metric_cell(value, metric: str) -> str:
    """An ablation cell: the row's metric says whether it is a rate."""
    if isinstance(value, float) and str(metric).startswith(RATE_ROW_PREFIXES):
        return pct(value)
    return cell(value)


@register.filter
def pct(fraction) -> str:
    """0.6667 -> '66.7%'; none -> '—'."""
    if fraction is None:
        return "—"
    return f"{float(fraction) * 100:.1f}%"


@register.filter
def at(sequence, index):
    """sequence[index] in a template (per-threshold counts beside the thresholds)."""
    try:
        return sequence[int(index)]
    except (IndexError, TypeError, ValueError):
        return None


@register.filter
def is_text(value) -> bool:
    """Text cells are left-aligned, numbers right-aligned."""
    return isinstance(value, str)
