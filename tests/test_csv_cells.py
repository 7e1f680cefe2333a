"""CSV cells rendered by Arrow over whole columns equal ``csv_cell`` applied to every value."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timezone

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.formats import csv_cell, csv_cells, csv_text

TEXT = st.one_of(st.none(), st.text(alphabet=st.sampled_from(list("ab,\"\n\r\t =+-@'é1 ")), max_size=6))
INTS = st.one_of(st.none(), st.integers(min_value=-2**63, max_value=2**63 - 1))
FLOATS = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(TEXT, INTS, st.one_of(st.none(), st.booleans()), FLOATS,
                          st.one_of(st.none(), st.integers(0, 2**32 - 1))), max_size=30))
def test_columns_render_as_csv_cell_renders_each_value(rows):
    cols = list(zip(*rows)) if rows else [(), (), (), (), ()]
    table = pa.table({
        "text": pa.array(cols[0], pa.string()),
        "wide": pa.array(cols[1], pa.int64()),
        "flag": pa.array(cols[2], pa.bool_()),
        "ratio": pa.array(cols[3], pa.float64()),
        "small": pa.array(cols[4], pa.uint32()),
    })
    for name in table.column_names:
        assert csv_cells(table.column(name).combine_chunks()) == [csv_cell(v) for v in table.column(name).to_pylist()]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(table.column_names)
    w.writerows([csv_cell(v) for v in row] for row in rows)
    assert csv_text(table) == buf.getvalue()


def test_other_types_fall_back_to_csv_cell():
    ts = datetime(2026, 3, 1, 2, 3, 4, tzinfo=timezone.utc)
    for arr in (pa.array([[1, 2], None, []], pa.list_(pa.int64())), pa.array([ts, None], pa.timestamp("us", tz="UTC")),
                pa.array(["=x", None, "y"]).dictionary_encode()):
        assert csv_cells(arr) == [csv_cell(v) for v in arr.to_pylist()]
