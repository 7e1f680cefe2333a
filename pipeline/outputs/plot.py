"""A trend as a line chart, SVG or PNG, drawn by matplotlib (its Agg backend: no screen needed).

Runs sit at their collection time on a time axis (a missed night leaves a gap, two months
take the width of two months); one line per workload, named in the legend; a run without a
value breaks its line. Runs without a collection time cannot be placed and are counted in
the subtitle. In the SVG each workload's line is the group ``workload-<n>`` (legend order)
and each point carries its run id and value as a tooltip (``<title>``).
"""

from __future__ import annotations

import io
import math
import re
from datetime import UTC
from html import escape
from pathlib import Path

from pipeline.analysis.trend import Point, Trend
from pipeline.errors import UsageError
from pipeline.outputs.formats import atomic_write, write_bytes


def _fmt(v: float) -> str:
    if abs(v) >= 1e15:
        return f"{v:.3e}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.4g}"


def _lines(t: Trend) -> dict[str, list[Point]]:
    """Placeable points per workload, in collection order, workloads in order of first run."""
    out: dict[str, list[Point]] = {}
    for p in t.points:
        if p.collected_at is not None:
            out.setdefault(p.workload or "(unknown workload)", []).append(p)
    return out


def _figure(t: Trend):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
    except ImportError:  # a dependency of profetl; only a broken install lacks it
        raise UsageError("plots need matplotlib (pip install matplotlib)") from None
    lines = _lines(t)
    values = [p.value for ps in lines.values() for p in ps if p.value is not None]
    if not values:
        raise UsageError("nothing to plot: no run with a collection time has a value")
    unplaced = sum(p.collected_at is None for p in t.points)
    fig, ax = plt.subplots(figsize=(10, 5), dpi=100)
    for i, (workload, points) in enumerate(lines.items()):
        xs = [p.collected_at.astimezone(UTC).replace(tzinfo=None) for p in points]
        ys = [math.nan if p.value is None else p.value for p in points]
        (line,) = ax.plot(xs, ys, marker="o", markersize=4, linewidth=1.8, label=workload)
        line.set_gid(f"workload-{i}")
    first = min(p.collected_at for ps in lines.values() for p in ps)
    last = max(p.collected_at for ps in lines.values() for p in ps)
    sub = (
        f"{len(t.points)} run(s), {sum(p.value is not None for p in t.points)} with a value; "
        f"{first:%Y-%m-%d %H:%M} .. {last:%Y-%m-%d %H:%M} UTC"
    )
    if unplaced:
        sub += f"; {unplaced} run(s) without a collection time not drawn"
    ax.set_title(f"{t.label}\n{sub}", fontsize=11, loc="left")
    ax.set_xlabel("collection start (UTC)")
    ax.set_ylabel(f"{t.stat + ' ' if t.stat else ''}{t.metric} ({t.unit})" if t.unit else t.label)
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: _fmt(v)))
    ax.grid(True, color="#dddddd", linewidth=0.8)
    ax.legend(title="workload", fontsize=8, title_fontsize=9, loc="best")
    fig.tight_layout()
    return fig, lines


def _with_tooltips(svg: str, lines: dict[str, list[Point]], unit: str) -> str:
    """A ``<title>`` (run id, time, value) on every point marker of each workload's group."""
    for i, points in enumerate(lines.values()):
        drawn = [p for p in points if p.value is not None]
        m = re.search(rf'<g id="workload-{i}">(.*?)</g>\n', svg, re.S)
        if not m:
            continue
        uses = list(re.finditer(r"<use [^>]*/>", m.group(1)))
        if len(uses) != len(drawn):
            continue
        body = m.group(1)
        for u, p in reversed(list(zip(uses, drawn))):
            tip = escape(f"{p.run_id} ({p.collected_at:%Y-%m-%d %H:%M} UTC): {_fmt(p.value)} {unit}".rstrip())
            body = body[: u.start()] + u.group(0)[:-2] + f"><title>{tip}</title></use>" + body[u.end() :]
        svg = svg[: m.start(1)] + body + svg[m.end(1) :]
    return svg


def svg(t: Trend) -> str:
    import matplotlib.pyplot as plt

    fig, lines = _figure(t)
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):  # text as <text>: searchable, selectable
        fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    return _with_tooltips(buf.getvalue(), lines, t.unit)


def _png(t: Trend) -> bytes:
    import matplotlib.pyplot as plt

    fig, _ = _figure(t)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def write_plot(t: Trend, out: str) -> None:
    """The chart to ``out``: ``.svg`` (or ``-``: SVG on standard output) or ``.png``."""
    suffix = Path(out).suffix.lower()
    if out == "-" or suffix == ".svg":
        data = svg(t).encode("utf-8")
    elif suffix == ".png":
        data = _png(t)
    else:
        raise UsageError(f"plot file {out!r}: name it .svg or .png")
    if out == "-":
        write_bytes(out, data)
    else:
        atomic_write(Path(out), lambda p: p.write_bytes(data))
