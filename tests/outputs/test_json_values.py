"""JSON-lines values rendered a column at a time equal ``json.dumps(json_value(v))`` of every
value, and the lines equal one ``json.dumps`` per row of those values (the oracle: Python's json
module, one value or row at a time)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.outputs.formats import FLOAT_PIECE_ROWS, _jsonl_chunks, json_texts, json_value

TEXT = st.one_of(
    st.none(), st.text(alphabet=st.sampled_from(list('ab,"\n\\ é1\u2028\x7f\x00{}:~#[]')), max_size=6)
)
ANY_TEXT = st.one_of(st.none(), st.text(max_size=8))
INTS = st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1))
FLOATS = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True))


def _text(chunks) -> str:
    return b"".join(chunks).decode("utf-8")


def _lines(batch: pa.RecordBatch) -> str:
    names = batch.schema.names
    return "".join(
        json.dumps({n: json_value(v) for n, v in zip(names, row)}) + "\n"
        for row in zip(*(c.to_pylist() for c in batch.columns))
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            TEXT,
            INTS,
            st.one_of(st.none(), st.booleans()),
            FLOATS,
            st.one_of(st.none(), st.floats(width=32, allow_nan=True, allow_infinity=True)),
            ANY_TEXT,
            st.one_of(st.none(), st.integers(0, 2**64 - 1)),
        ),
        max_size=30,
    )
)
def test_columns_and_lines_are_what_the_json_module_writes(rows):
    cols = list(zip(*rows)) if rows else [()] * 7
    batch = pa.record_batch(
        {
            "text": pa.array(cols[0], pa.string()),
            "wide": pa.array(cols[1], pa.int64()),
            "flag": pa.array(cols[2], pa.bool_()),
            "ratio": pa.array(cols[3], pa.float64()),
            "narrow": pa.array(cols[4], pa.float32()),
            'any "name"': pa.array(cols[5], pa.string()),
            "big": pa.array(cols[6], pa.uint64()),
        }
    )
    for column in batch.columns:
        assert json_texts(column).to_pylist() == [json.dumps(json_value(v)) for v in column.to_pylist()]
    assert _text(_jsonl_chunks([batch], batch.schema.names)) == _lines(batch)


def test_other_types_go_value_by_value():
    """Each array's texts are json_value's of its values, and, written out by hand: NaN as
    null, ISO 8601 times, decimals as numbers, bytes as hex."""
    ts = datetime(2026, 3, 1, 2, 3, 4, tzinfo=UTC)
    for arr, want in (
        (pa.array([[1.5, float("nan")], None, []], pa.list_(pa.float64())), ["[1.5, null]", "null", "[]"]),
        (pa.array([ts, None], pa.timestamp("us", tz="UTC")), ['"2026-03-01T02:03:04+00:00"', "null"]),
        (pa.array([Decimal("1.25"), None], pa.decimal128(5, 2)), ["1.25", "null"]),
        (pa.array([b"\x01\xff", None], pa.binary()), ['"01ff"', "null"]),
        (pa.array(["x", None, "y"]).dictionary_encode(), ['"x"', "null", '"y"']),
    ):
        assert json_texts(arr).to_pylist() == [json.dumps(json_value(v)) for v in arr.to_pylist()] == want


def test_float_edges_are_python_repr():
    values = [
        0.0,
        -0.0,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        1e15,
        1e16,
        1e17,
        1e22,
        123.0,
        1.0,
        1e-4,
        1e-5,
        0.1 + 0.2,
        1 / 3,
        6.535366370929996e-05,
        12345678.0,
        123456789012345.6,
    ]
    assert json_texts(pa.array(values)).to_pylist() == [repr(v) for v in values]


def test_a_batch_of_one_column_and_an_empty_batch():
    one = pa.record_batch({"x": pa.array([1.5, None])})
    assert _text(_jsonl_chunks([one, one.slice(0, 0)], ["x"])) == _lines(one)


def test_a_batch_of_many_pieces_keeps_its_rows_in_order():
    rng = np.random.default_rng(11)
    n = FLOAT_PIECE_ROWS * 4 + 5
    values = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 20, n)
    batch = pa.record_batch({"x": values, "n": np.arange(n)})
    got, want = _text(_jsonl_chunks([batch], ["x", "n"])).splitlines(), _lines(batch).splitlines()
    assert len(got) == len(want) == n
    wrong = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), None)
    assert wrong is None, f"line {wrong}: {got[wrong]!r}, the json module wrote {want[wrong]!r}"


def test_text_to_escape_among_plain_text_keeps_its_place():
    values = ["plain", "中文", None, 'say "hi"', "back\\slash", "tab\there", "ok", "\x7f", "é"]
    column = pa.array(values * 3, pa.large_string())
    assert json_texts(column).to_pylist() == [json.dumps(json_value(v)) for v in values * 3]
