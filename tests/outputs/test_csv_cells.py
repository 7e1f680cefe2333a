"""CSV cells rendered over whole columns (Arrow, DuckDB's printf for floats) equal ``csv_cell``
applied to every value, and the records equal what Python's csv writer writes of those cells."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.outputs.formats import FLOAT_PIECE_ROWS, csv_cell, csv_cells, csv_text

TEXT = st.one_of(st.none(), st.text(alphabet=st.sampled_from(list("ab,\"\n\r\t =+-@'é1 ")), max_size=6))
INTS = st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1))
FLOATS = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            TEXT,
            INTS,
            st.one_of(st.none(), st.booleans()),
            FLOATS,
            st.one_of(st.none(), st.integers(0, 2**32 - 1)),
        ),
        max_size=30,
    )
)
@pytest.mark.slow
def test_columns_render_as_csv_cell_renders_each_value(rows):
    cols = list(zip(*rows)) if rows else [(), (), (), (), ()]
    table = pa.table(
        {
            "text": pa.array(cols[0], pa.string()),
            "wide": pa.array(cols[1], pa.int64()),
            "flag": pa.array(cols[2], pa.bool_()),
            "ratio": pa.array(cols[3], pa.float64()),
            "small": pa.array(cols[4], pa.uint32()),
        }
    )
    for name in table.column_names:
        assert csv_cells(table.column(name).combine_chunks()).to_pylist() == [
            csv_cell(v) for v in table.column(name).to_pylist()
        ]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(table.column_names)
    w.writerows([csv_cell(v) for v in row] for row in rows)
    assert csv_text(table) == buf.getvalue()


def test_other_types_fall_back_to_csv_cell():
    """Each array's cells are csv_cell's of its values, and, written out by hand: a list joined
    by commas, ISO 8601 times, a formula defused."""
    ts = datetime(2026, 3, 1, 2, 3, 4, tzinfo=UTC)
    for arr, want in (
        (pa.array([[1, 2], None, []], pa.list_(pa.int64())), ["1,2", "", ""]),
        (pa.array([ts, None], pa.timestamp("us", tz="UTC")), ["2026-03-01T02:03:04+00:00", ""]),
        (pa.array(["=x", None, "y"]).dictionary_encode(), ["'=x", "", "y"]),
    ):
        assert csv_cells(arr).to_pylist() == [csv_cell(v) for v in arr.to_pylist()] == want


def _csv_module(table: pa.Table) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(table.column_names)
    w.writerows(zip(*([csv_cell(v) for v in c.to_pylist()] for c in table.columns)))
    return buf.getvalue()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True), max_size=40),
    st.sampled_from([pa.float64(), pa.float32()]),
)
def test_floats_have_the_digits_of_python_format(values, ty):
    if ty == pa.float32():  # values a float32 holds, as Python sees them after the round trip
        values = pa.array(values, pa.float32()).to_pylist()
    arr = pa.array(values, ty)
    assert csv_cells(arr).to_pylist() == [csv_cell(v) for v in arr.to_pylist()]


def test_float_edges():
    values = [
        0.0,
        -0.0,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        1e15,
        1e16,
        999999999999999.9,
        123456789012345.6,
        1e-4,
        1e-5,
        0.1 + 0.2,
        1 / 3,
        -2.5,
        37.946000000000005,
        1e21,
        12345678.0,
    ]
    assert csv_cells(pa.array(values)).to_pylist() == [format(v, ".15g") for v in values]


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, max_size=20))
def test_a_table_of_one_text_column_is_written_as_the_csv_module_writes_it(cells):
    # one field per record: an empty one is written as "" so that the record is not an empty line
    table = pa.table({"only": pa.array(cells, pa.string())})
    assert csv_text(table) == _csv_module(table)


def test_records_are_the_csv_module_records_across_batches():
    table = pa.table(
        {"a": pa.array(["x", "y,z", None, '"', "=1"]), "b": pa.array([1.5, None, 2.0, float("nan"), 3e-7])}
    )
    batches = pa.Table.from_batches(table.to_batches(max_chunksize=2))
    assert csv_text(batches) == _csv_module(table)


def test_a_batch_of_many_pieces_keeps_its_rows_in_order():
    # more rows than one piece DuckDB formats per thread: every row must come back in its place
    rng = np.random.default_rng(7)
    n = FLOAT_PIECE_ROWS * 5 + 3
    values = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 20, n)
    table = pa.table({"x": values, "n": np.arange(n), "y": values[::-1].copy()})
    got, want = csv_text(table).splitlines(), _csv_module(table).splitlines()
    assert len(got) == len(want) == n + 1
    wrong = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), None)
    assert wrong is None, f"record {wrong}: {got[wrong]!r}, the csv module wrote {want[wrong]!r}"


def test_large_text_columns_are_written_as_text_columns():
    values = ["=x", None, "a,b", 'q"', "plain"]
    table = pa.table({"big": pa.array(values, pa.large_string()), "n": [1, 2, 3, 4, 5]})
    assert csv_text(table) == _csv_module(table)
