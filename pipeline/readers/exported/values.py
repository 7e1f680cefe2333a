"""Units and quirks of exported text, handled once, vectorised over whole columns.

Exported CSV and JSON write times as decimal microsecond strings ("1736408883704643.212\t": the
tab guards the cell against spreadsheets), durations with up to 8 decimals ("53.7410625"),
and ``N/A`` (or an empty cell) where a value does not apply. Wall-clock microseconds carry 16
significant digits, more than a float64 holds, so times are parsed as decimal text into exact
integer nanoseconds, rounding half away from zero at the nanosecond (msprof prints
27080.5 ns as "27.081").
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

MISSING = ("", "N/A", "NA", "None", "null", "nan", "NaN", "-")
_DECIMAL = r"^(?P<sign>[-+]?)(?P<int>\d*)(?:\.(?P<frac>\d*))?$"
_INT64_MAX = str(2**63 - 1)


def clean(values) -> pa.Array:
    """Strings with surrounding whitespace and tabs removed; missing markers become NULL."""
    a = pa.array(values, pa.string()) if not isinstance(values, (pa.Array, pa.ChunkedArray)) else values
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    a = pc.utf8_trim_whitespace(a.cast(pa.string()))
    a = pc.utf8_trim(a, characters='"')
    return pc.if_else(pc.is_in(a, value_set=pa.array(MISSING)), pa.nulls(len(a), pa.string()), a)


SHAPE_COLUMNS = ("input_shapes", "output_shapes")


def clean_shapes(values) -> pa.Array:
    """Shape cells: as ``clean``, but the empty shape of a scalar tensor stays an empty string.
    Exporters write a shape in doubled quotes (``""4,4""`` in the CSV text, ``"4,4"`` in a
    database), so a scalar's shape is ``""``: quotes around nothing. That is a shape, unlike an
    empty cell or N/A (no shape known), which are NULL."""
    a = pa.array(values, pa.string()) if not isinstance(values, (pa.Array, pa.ChunkedArray)) else values
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    scalar = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(a.cast(pa.string())), '""'), False)
    return pc.if_else(scalar, pa.scalar("", pa.string()), clean(a))


def _decimal_parts(values) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    a = clean(values)
    parts = pc.extract_regex(a, _DECIMAL)  # NULL where the text is not a plain decimal
    sign = pc.struct_field(parts, "sign")
    whole = pc.struct_field(parts, "int")
    frac = pc.struct_field(parts, "frac")
    bad = pc.and_(pc.is_valid(a), pc.is_null(parts))
    return a, sign, whole, frac, bad


def decimal_to_int(values, scale_digits: int) -> tuple[pa.Array, pa.Array]:
    """Decimal strings times 10**scale_digits as exact int64, rounded half away from zero.

    Returns (values, bad): ``bad`` is True where a non-empty cell was not a decimal number
    (the value is NULL there); the caller counts and reports those.
    """
    _, sign, whole, frac, bad = _decimal_parts(values)
    frac = pc.if_else(pc.is_null(frac), "", frac)
    padded = pc.utf8_rpad(frac, width=scale_digits + 1, padding="0")
    kept = pc.utf8_slice_codeunits(padded, 0, scale_digits)
    next_digit = pc.utf8_slice_codeunits(padded, scale_digits, scale_digits + 1)
    digits = pc.utf8_ltrim(pc.binary_join_element_wise(whole, kept, ""), characters="0")
    digits = pc.if_else(pc.equal(digits, ""), "0", digits)
    up = pc.greater_equal(pc.cast(next_digit, pa.int64()), 5)
    # beyond int64 (more than 19 digits, or 19 above its maximum, or the maximum rounded up):
    # NULL and bad, never an overflow
    length = pc.utf8_length(digits)
    over = pc.or_(
        pc.greater(length, 19),
        pc.and_(
            pc.equal(length, 19),
            pc.or_(pc.greater(digits, _INT64_MAX), pc.and_(pc.equal(digits, _INT64_MAX), up)),
        ),
    )
    over = pc.fill_null(over, False)
    digits = pc.if_else(over, pa.nulls(len(digits), pa.string()), digits)
    n = pc.cast(digits, pa.int64())
    n = pc.add(n, pc.cast(up, pa.int64()))
    n = pc.if_else(pc.equal(sign, "-"), pc.negate(n), n)
    return n, pc.or_(bad, over)


def us_to_ns(values) -> tuple[pa.Array, pa.Array]:
    """Microsecond decimal strings (times or durations) to integer nanoseconds."""
    return decimal_to_int(values, 3)


def to_float(values) -> tuple[pa.Array, pa.Array]:
    """Numeric cells to float64; NULL for N/A and empty; ``bad`` marks other text."""
    a = clean(values)
    ok = pc.match_substring_regex(a, r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
    bad = pc.and_(pc.is_valid(a), pc.invert(pc.fill_null(ok, False)))
    good = pc.if_else(pc.fill_null(ok, False), a, pa.nulls(len(a), pa.string()))
    return pc.cast(good, pa.float64()), bad


def to_int(values) -> tuple[pa.Array, pa.Array]:
    """Integer cells to int64; NULL for N/A and empty; ``bad`` marks other text."""
    a = clean(values)
    ok = pc.fill_null(pc.match_substring_regex(a, r"^[-+]?\d+$"), False)
    bad = pc.and_(pc.is_valid(a), pc.invert(ok))
    good = pc.if_else(ok, a, pa.nulls(len(a), pa.string()))
    n, over = decimal_to_int(good, 0)  # beyond int64: NULL and bad, never an overflow
    return n, pc.or_(bad, over)


def to_int32(values) -> tuple[pa.Array, pa.Array]:
    """Integer cells that must fit an int32 column (ids, block dims); ``bad`` also marks values out of range."""
    n, bad = to_int(values)
    inside = pc.fill_null(pc.and_(pc.greater_equal(n, -(2**31)), pc.less(n, 2**31)), True)
    return pc.if_else(inside, n, pa.nulls(len(n), pa.int64())), pc.or_(bad, pc.invert(inside))


def column_key(header: str) -> str:
    """A header cell as a lookup key: case, spaces, tabs and a BOM do not matter."""
    return "".join(header.replace("\ufeff", "").split()).lower()


_UNITS = (("(us)", "_us"), ("(gb/s)", "_gbps"), ("(kb)", "_kb"), ("(%)", "_pct"), ("(bytes/s)", "_bps"))


def metric_name(label: str) -> str:
    """A metric's header as a column-like name: lower case, unit as suffix, other punctuation '_'.

    ``aicore_time(us)`` -> ``aicore_time_us``, ``l2_read_bw(GB/s)`` -> ``l2_read_bw_gbps``,
    ``GM_to_L1_datas(KB)`` -> ``gm_to_l1_datas_kb``, ``cube_utilization(%)`` -> ``cube_utilization_pct``.
    """
    s = label.replace("\ufeff", "").strip().lower()
    for unit, suffix in _UNITS:
        s = s.replace(unit, suffix)
    s = re.sub(r"[^0-9a-z]+", "_", s)
    return s.strip("_")
