"""How one value shows in a terminal table (``show``, ``query``, ``compare``, ``trend``): a
module of its own, importing nothing but the standard library's ``math``, so that ``query``
can print its rows without loading the export code."""

from __future__ import annotations

import math


def cell(v, unit: str = "") -> str:
    """``v`` as text; ``unit`` is its column's (the contract's). A float of ``ns`` (an average)
    shows as whole ns, cut toward zero as msprof's Avg(ns) is (its SQL divides integers), like
    the integer columns of ns beside it; a percentage with three decimals, as msprof's files
    round it (so a column of them lines up); other floats show 6 significant digits, never in
    exponent notation (67162816 and 0.00000025, not 6.71628e+07 and 2.5e-07), like the
    integer columns beside them."""
    if v is None:
        return "N/A"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if unit == "ns":
            return str(int(v))
        if unit == "%":
            return f"{v:.3f}"
        return _positional(v)
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):  # a map (a run's tags)
            return ",".join(f"{k}={x}" for k, x in v)
        return ",".join(str(x) for x in v)
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return ",".join(f"{k}={x}" for k, x in v.items())
    return str(v)


def _positional(v: float) -> str:
    """A finite float in 6 significant digits without an exponent; a whole number from 1e6 up."""
    text = f"{v:.6g}"
    if "e" not in text:
        return text
    if abs(v) >= 1:
        return f"{v:.0f}"
    decimals = 5 - math.floor(math.log10(abs(v)))  # the 6th significant digit's place
    return f"{v:.{decimals}f}".rstrip("0")
