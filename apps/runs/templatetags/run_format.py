"""Compact number formats for run tables: wall time, token counts, cost."""

from decimal import Decimal

from django import template

from apps.runs.presenter import short_reason, turn_failure

register = template.Library()


@register.filter
def duration(seconds) -> str:
    """42.3 -> '42 s', 192 -> '3m 12s', 7380 -> '2h 03m'; nothing measured -> '—'."""
    try:
        total = int(round(float(seconds)))
    except (TypeError, ValueError):
        return "—"
    if total <= 0:
        return "—"
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs} s"


@register.filter
def tokens(count) -> str:
    """1234 -> '1.2k', 2_500_000 -> '2.5M', 0 -> '—'."""
    try:
        n = int(count)
    except (TypeError, ValueError):
        return "—"
    if n <= 0:
        return "—"
    for limit, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= limit:
            return f"{n / limit:.1f}{suffix}"
    return str(n)


@register.filter
def usd(amount) -> str:
    """Decimal('0.012345') -> '$0.0123'; zero -> '—'."""
    try:
        value = Decimal(amount)
    except (TypeError, ValueError, ArithmeticError):
        return "—"
    if value <= 0:
        return "—"
    return f"${value:.2f}" if value >= 1 else f"${value:.4f}"


@register.filter
def short(text) -> str:
    """The first line of a long reason, clipped at a word (the whole text goes in a title or <details>)."""
    return short_reason(str(text or ""))


@register.filter
def turn_failure_text(verdict, reason) -> str:
    """Why a turn is not valid: 'compile error: candidate.cu(44): ...'; '' for valid or pending turns."""
    return turn_failure(str(verdict or ""), str(reason or ""))
