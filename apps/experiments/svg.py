"""Experiment charts as standalone SVG, drawn on the server.

They serve the "Download SVG" links and stand in for the interactive charts where JavaScript does not run
(the page inlines them inside the element that kw-charts replaces). Input is the same data the browser
charts read (apps.experiments.export: `lines` for curves, `operators` for per-task bars), so both show the
same numbers. Every text goes through `escape`; everything else written into the markup is a number we
formatted or a colour of the fixed palette, so user-provided names cannot inject markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

# The palette of frontend/charts.js, so a downloaded SVG looks like the chart on the page.
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd")
GRID = "#d8dee4"
FG = "#1d2125"
MUTED = "#8c959f"
WIDTH = 640
PLOT_HEIGHT = 240
LEFT, RIGHT, TOP = 60, 16, 30


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _f(value: float) -> str:
    """A coordinate: one decimal is plenty, and no exponent ever reaches the markup."""
    return f"{value:.1f}"


def fmt(value: float) -> str:
    """A tick or value label: up to 4 significant digits, no trailing zeros."""
    if value == 0:
        return "0"
    if abs(value) >= 1e5 or abs(value) < 1e-3:
        return f"{value:.1e}"
    return f"{value:.4g}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] in steps of 1, 2, 2.5 or 5 times a power of ten."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + step * 1e-9:
        ticks.append(round(k * step, 12))
        k += 1
    return ticks


def _text(x: float, y: float, text: str, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}"{extra}>{escape(str(text))}</text>'


def _frame(title: str, height: float, body: list[str]) -> str:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{_f(height)}" '
            f'viewBox="0 0 {WIDTH} {_f(height)}" role="img" aria-label="{escape(title)}" '
            f'font-family="system-ui, sans-serif" font-size="11" fill="{FG}">')
    return "".join([head, f"<title>{escape(title)}</title>", '<rect width="100%" height="100%" fill="#ffffff"/>',
                    _text(WIDTH / 2, 16, title, extra=' font-weight="600" font-size="13"'), *body, "</svg>"])


def _y_axis(lo: float, hi: float, y_of, plot_w: float, label: str) -> list[str]:
    parts = []
    for tick in nice_ticks(lo, hi):
        y = y_of(tick)
        parts.append(f'<line x1="{_f(LEFT)}" x2="{_f(LEFT + plot_w)}" y1="{_f(y)}" y2="{_f(y)}" stroke="{GRID}"/>')
        parts.append(_text(LEFT - 5, y + 4, fmt(tick), anchor="end"))
    if label:
        mid = TOP + PLOT_HEIGHT / 2
        parts.append(f'<text transform="translate(14 {_f(mid)}) rotate(-90)" text-anchor="middle">'
                     f"{escape(label)}</text>")
    return parts


def _legend(labels: Sequence[str], y: float) -> tuple[list[str], float]:
    """Coloured squares with labels, wrapped onto as many rows as needed; returns (parts, height)."""
    parts, x, row = [], float(LEFT), 0
    for n, label in enumerate(labels):
        width = 24 + 6.5 * len(label)
        if x + width > WIDTH - RIGHT and x > LEFT:
            x, row = float(LEFT), row + 1
        top = y + row * 16
        parts.append(f'<rect x="{_f(x)}" y="{_f(top)}" width="10" height="10" fill="{PALETTE[n % len(PALETTE)]}"/>')
        parts.append(_text(x + 14, top + 9, label, anchor="start"))
        x += width
    return parts, (row + 1) * 16 if labels else 0


def _y_range(values: Sequence[float], include: Sequence[Any] = ()) -> tuple[float, float]:
    """From 0 (or below, to include a value) to a little above the largest value; exactly to the largest
    included value when no data goes beyond it (a 0-100 % axis stays 0-100)."""
    include = [v for v in map(_num, include) if v is not None]
    lo = min([0.0, *include])
    top = max([*values, *include], default=1.0)
    if include and top == max(include):
        return lo, top if top > lo else lo + 1.0
    return lo, top * 1.08 if top > 0 else lo + 1.0


def lines_svg(data: dict[str, Any], title: str) -> str:
    """A line chart of kw-charts `lines` data: {x, xlabel, ylabel, series: [{label, values}]}, with optional
    `categorical` (x values as evenly spaced categories) and `yInclude` (values the y axis must cover; [0, 100]
    keeps a percentage axis at 0-100). Gaps (None) break a line."""
    labels = [fmt(x) if _num(x) is not None else str(x) for x in data.get("x") or ()]
    # categorical: the x values are evenly spaced categories (thresholds 0, 1, 2, 4 ... 32), as in the browser
    xs = [float(i) for i in range(len(labels))] if data.get("categorical") else [_num(x) for x in data.get("x") or ()]
    series = [(str(s.get("label", "")), [_num(v) for v in s.get("values") or ()]) for s in data.get("series") or ()]
    known_x = [x for x in xs if x is not None]
    x_lo, x_hi = (min(known_x), max(known_x)) if known_x else (0.0, 1.0)
    if x_hi == x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    values = [v for _, vs in series for v in vs if v is not None]
    y_lo, y_hi = _y_range(values, data.get("yInclude") or ())
    plot_w = WIDTH - LEFT - RIGHT

    def x_of(x: float) -> float:
        return LEFT + (x - x_lo) / (x_hi - x_lo) * plot_w

    def y_of(y: float) -> float:
        return TOP + PLOT_HEIGHT - (y - y_lo) / (y_hi - y_lo) * PLOT_HEIGHT

    parts = _y_axis(y_lo, y_hi, y_of, plot_w, str(data.get("ylabel", "")))
    parts.append(f'<rect x="{_f(LEFT)}" y="{_f(TOP)}" width="{_f(plot_w)}" height="{PLOT_HEIGHT}" fill="none" '
                 f'stroke="{GRID}"/>')
    for x, label in zip(xs, labels, strict=True):
        if x is not None:
            parts.append(_text(x_of(x), TOP + PLOT_HEIGHT + 14, label))
    parts.append(_text(LEFT + plot_w / 2, TOP + PLOT_HEIGHT + 30, str(data.get("xlabel", ""))))
    for n, (_, vs) in enumerate(series):
        colour = PALETTE[n % len(PALETTE)]
        points = [(x_of(x), y_of(v)) for x, v in zip(xs, vs, strict=False) if x is not None and v is not None]
        segment: list[str] = []
        for x, v in zip(xs, vs, strict=False):
            if x is None or v is None:
                if len(segment) > 1:
                    parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                                 f'points="{" ".join(segment)}"/>')
                segment = []
                continue
            segment.append(f"{_f(x_of(x))},{_f(y_of(v))}")
        if len(segment) > 1:
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{" ".join(segment)}"/>')
        parts += [f'<circle cx="{_f(px)}" cy="{_f(py)}" r="2.5" fill="{colour}"/>' for px, py in points]
    legend, legend_h = _legend([label for label, _ in series], TOP + PLOT_HEIGHT + 40)
    return _frame(title, TOP + PLOT_HEIGHT + 44 + legend_h, parts + legend)


def bars_svg(data: dict[str, Any], title: str) -> str:
    """Grouped bars of kw-charts `operators` data: {labels, ylabel, series: [{label, values}]}, one group
    per label, one bar per series (none where the value is None), a dashed line at 1×."""
    labels = [str(label) for label in data.get("labels") or ()]
    series = [(str(s.get("label", "")), [_num(v) for v in s.get("values") or ()]) for s in data.get("series") or ()]
    values = [v for _, vs in series for v in vs if v is not None]
    y_lo, y_hi = _y_range(values, [1.0])
    plot_w = WIDTH - LEFT - RIGHT
    group_w = plot_w / max(len(labels), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)

    def y_of(y: float) -> float:
        return TOP + PLOT_HEIGHT - (y - y_lo) / (y_hi - y_lo) * PLOT_HEIGHT

    parts = _y_axis(y_lo, y_hi, y_of, plot_w, str(data.get("ylabel", "")))
    parts.append(f'<rect x="{_f(LEFT)}" y="{_f(TOP)}" width="{_f(plot_w)}" height="{PLOT_HEIGHT}" fill="none" '
                 f'stroke="{GRID}"/>')
    for n, (label, vs) in enumerate(series):
        colour = PALETTE[n % len(PALETTE)]
        for k, value in enumerate(vs[:len(labels)]):
            if value is None:
                continue
            x = LEFT + k * group_w + group_w * 0.1 + n * bar_w
            top = y_of(max(value, 0.0))
            parts.append(f'<rect x="{_f(x)}" y="{_f(top)}" width="{_f(bar_w)}" height="{_f(y_of(0) - top)}" '
                         f'fill="{colour}"><title>{escape(labels[k])} · {escape(label)}: {fmt(value)}</title></rect>')
    one = y_of(1.0)
    parts.append(f'<line x1="{_f(LEFT)}" x2="{_f(LEFT + plot_w)}" y1="{_f(one)}" y2="{_f(one)}" stroke="{MUTED}" '
                 'stroke-dasharray="5 4"/>')
    longest = max((len(label) for label in labels), default=0)
    label_h = min(longest, 28) * 5.5 + 12  # labels run at -45°, truncated to 28 characters
    for k, label in enumerate(labels):
        x, y = LEFT + (k + 0.5) * group_w, TOP + PLOT_HEIGHT + 12
        short = label if len(label) <= 28 else label[:27] + "…"
        parts.append(f'<text transform="translate({_f(x)} {_f(y)}) rotate(-45)" text-anchor="end">'
                     f"{escape(short)}</text>")
    legend, legend_h = _legend([label for label, _ in series], TOP + PLOT_HEIGHT + label_h + 8)
    return _frame(title, TOP + PLOT_HEIGHT + label_h + 12 + legend_h, parts + legend)
