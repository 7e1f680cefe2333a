"""How one value shows in a terminal table (``show``, ``query``, ``compare``, ``trend``): a
module of its own, with no imports, so that ``query`` can print its rows without loading
the export code."""

from __future__ import annotations


def cell(v) -> str:
    if v is None:
        return "N/A"
    if isinstance(v, float):
        return f"{v:.6g}" if abs(v) < 1e15 else f"{v:.0f}"
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    return str(v)
