"""JSON-lines values taken a column at a time equal ``json_value`` applied to every value, and
the lines equal one ``json.dumps`` per row of those values."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from decimal import Decimal

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.formats import _jsonl_chunks, json_value, json_values

TEXT = st.one_of(st.none(), st.text(alphabet=st.sampled_from(list('ab,"\n\\ é1\u2028')), max_size=6))
INTS = st.one_of(st.none(), st.integers(min_value=-2**63, max_value=2**63 - 1))
FLOATS = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(TEXT, INTS, st.one_of(st.none(), st.booleans()), FLOATS,
                          st.one_of(st.none(), st.floats(width=32, allow_nan=True, allow_infinity=True))),
                max_size=30))
def test_columns_give_what_json_value_gives_each_value(rows):
    cols = list(zip(*rows)) if rows else [(), (), (), (), ()]
    batch = pa.record_batch({
        "text": pa.array(cols[0], pa.string()),
        "wide": pa.array(cols[1], pa.int64()),
        "flag": pa.array(cols[2], pa.bool_()),
        "ratio": pa.array(cols[3], pa.float64()),
        "narrow": pa.array(cols[4], pa.float32()),
    })
    for column in batch.columns:
        assert json_values(column) == [json_value(v) for v in column.to_pylist()]
    names = batch.schema.names
    want = "".join(json.dumps({n: json_value(v) for n, v in zip(names, row)}) + "\n"
                   for row in zip(*(c.to_pylist() for c in batch.columns)))
    assert "".join(_jsonl_chunks([batch], names)) == want


def test_other_types_go_value_by_value():
    ts = datetime(2026, 3, 1, 2, 3, 4, tzinfo=timezone.utc)
    for arr in (pa.array([[1.5, float("nan")], None, []], pa.list_(pa.float64())),
                pa.array([ts, None], pa.timestamp("us", tz="UTC")),
                pa.array([Decimal("1.25"), None], pa.decimal128(5, 2)),
                pa.array([b"\x01\xff", None], pa.binary()),
                pa.array(["x", None, "y"]).dictionary_encode()):
        assert json_values(arr) == [json_value(v) for v in arr.to_pylist()]
