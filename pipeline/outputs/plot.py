"""A trend as a line chart: SVG written by hand (no dependency), PNG through matplotlib if installed.

Runs are spaced evenly along x in collection order (a missed night leaves no hole);
a run without a value breaks the line. Each point carries its run id and value as
a tooltip in the SVG.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

from pipeline.errors import UsageError
from pipeline.outputs.formats import atomic_write, write_text
from pipeline.analysis.trend import Trend

W, H = 900, 440
LEFT, RIGHT, TOP, BOTTOM = 90, 30, 60, 110


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        lo, hi = lo - (abs(lo) or 1) * 0.1, hi + (abs(hi) or 1) * 0.1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    v = start
    while v <= hi + step * 0.5:
        ticks.append(round(v, 12))
        v += step
    return ticks


def _fmt(v: float) -> str:
    if abs(v) >= 1e15:
        return f"{v:.3e}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.4g}"


def _x_label(p, with_time: bool) -> str:
    if p.collected_at is None:
        return p.run_id[:15]
    return p.collected_at.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d")


def svg(t: Trend) -> str:
    values = [p.value for p in t.points if p.value is not None]
    if not values:
        raise UsageError("nothing to plot: no run has a value")
    ticks = _nice_ticks(min(values), max(values))
    lo, hi = ticks[0], ticks[-1]
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    n = len(t.points)

    def x(i: int) -> float:
        return LEFT + (pw / 2 if n == 1 else i * pw / (n - 1))

    def y(v: float) -> float:
        return TOP + ph - (v - lo) / (hi - lo) * ph

    dated = [p.collected_at.date() for p in t.points if p.collected_at]
    with_time = len(set(dated)) < len(dated)  # two runs on one day: show the hour too
    first = next((p.collected_at for p in t.points if p.collected_at), None)
    last = next((p.collected_at for p in reversed(t.points) if p.collected_at), None)
    span = f"{first:%Y-%m-%d %H:%M} .. {last:%Y-%m-%d %H:%M} UTC" if first and last else ""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{LEFT}" y="24" font-size="16" font-weight="bold">{escape(t.label)}</text>',
        f'<text x="{LEFT}" y="44" fill="#555">{escape(f"{n} run(s), {len(values)} with a value; {span}")}</text>',
    ]
    for v in ticks:
        out.append(f'<line x1="{LEFT}" y1="{y(v):.1f}" x2="{W - RIGHT}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{escape(_fmt(v))}</text>')
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + ph}" stroke="#333"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP + ph}" x2="{W - RIGHT}" y2="{TOP + ph}" stroke="#333"/>')
    every = max(1, math.ceil(n / 25))
    for i, p in enumerate(t.points):
        if i % every == 0 or i == n - 1:
            lx, ly = x(i), TOP + ph + 14
            out.append(f'<text x="{lx:.1f}" y="{ly}" text-anchor="end" transform="rotate(-45 {lx:.1f} {ly})">'
                       f'{escape(_x_label(p, with_time))}</text>')
    segment: list[str] = []
    segments = []
    for i, p in enumerate(t.points):
        if p.value is None:
            if segment:
                segments.append(segment)
            segment = []
            continue
        segment.append(f"{x(i):.1f},{y(p.value):.1f}")
    if segment:
        segments.append(segment)
    for s in segments:
        out.append(f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{" ".join(s)}"/>')
    for i, p in enumerate(t.points):
        if p.value is None:
            out.append(f'<text x="{x(i):.1f}" y="{TOP + ph - 4}" text-anchor="middle" fill="#c00">×'
                       f'<title>{escape(p.run_id)}: no value</title></text>')
            continue
        when = f" ({p.collected_at:%Y-%m-%d %H:%M} UTC)" if p.collected_at else ""
        out.append(f'<circle cx="{x(i):.1f}" cy="{y(p.value):.1f}" r="3.5" fill="#1f77b4">'
                   f'<title>{escape(f"{p.run_id}{when}: {_fmt(p.value)} {t.unit}".rstrip())}</title></circle>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _png(t: Trend, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("PNG needs matplotlib (pip install matplotlib); an .svg plot needs nothing") from None
    fig, ax = plt.subplots(figsize=(9, 4.4), dpi=100)
    xs = list(range(len(t.points)))
    ax.plot(xs, [math.nan if p.value is None else p.value for p in t.points], marker="o")
    ax.set_title(t.label)
    ax.set_xticks(xs, [_x_label(p, False) for p in t.points], rotation=45, ha="right")
    fig.tight_layout()
    atomic_write(path, lambda p: fig.savefig(p, format="png"))
    plt.close(fig)


def write_plot(t: Trend, out: str) -> None:
    """The chart to ``out``: ``.svg`` (or ``-``: SVG on standard output) or ``.png``."""
    suffix = Path(out).suffix.lower()
    if out == "-" or suffix == ".svg":
        write_text(out, svg(t))
    elif suffix == ".png":
        _png(t, Path(out))
    else:
        raise UsageError(f"plot file {out!r}: name it .svg or .png")
