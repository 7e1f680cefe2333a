"""How one value shows in a terminal table (``show``, ``query``, ``compare``, ``trend``): a
module of its own, importing nothing but the standard library's ``math``, so that ``query``
can print its rows without loading the export code."""

from __future__ import annotations

import math


def cell(v, unit: str = "") -> str:
    """``v`` as text; ``unit`` is its column's (the contract's). A float of ``ns`` (an average)
    shows as whole ns, cut toward zero as msprof's Avg(ns) is (its SQL divides integers), like
    the integer columns of ns beside it; a percentage with three decimals, as msprof's files
    round it (so a column of them lines up); other floats show 6 significant digits."""
    if v is None:
        return "N/A"
    if isinstance(v, float):
        finite = math.isfinite(v)
        if finite and unit == "ns":
            return str(int(v))
        if finite and unit == "%":
            return f"{v:.3f}"
        return f"{v:.6g}" if abs(v) < 1e15 else f"{v:.0f}"
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):  # a map (a run's tags)
            return ",".join(f"{k}={x}" for k, x in v)
        return ",".join(str(x) for x in v)
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return ",".join(f"{k}={x}" for k, x in v.items())
    return str(v)
