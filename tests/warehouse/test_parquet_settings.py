"""The warehouse's Parquet files: min/max statistics on numbers and times, none on text; how
columns are encoded."""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse.sink import parquet_writer
from pipeline.warehouse.store import Warehouse
from tests.helpers.built import build_dump
from tests.helpers.warehouse_checks import own_part_file

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


def test_raw_and_mart_files_keep_statistics_for_numbers_only(tmp_path):
    generate(tmp_path / "d", HiprofConfig(inferences=3))
    run, _ = build_dump(tmp_path / "wh", tmp_path / "d")
    wh = Warehouse(tmp_path / "wh")
    files = [
        own_part_file(wh, "raw", "api_calls", run["run_id"], run["ingest_id"]),
        own_part_file(wh, "marts", "op_summary", run["run_id"], run["build_id"]),
    ]
    bounded = 0
    for path in files:
        f = pq.ParquetFile(path)
        table = f.read()
        assert table.num_rows > 0, path
        group = f.metadata.row_group(0)
        for i, field in enumerate(f.schema_arrow):
            stats = group.column(i).statistics
            if field.name == "run_id":  # the one text column with bounds: runs share group files
                assert (stats.min, stats.max) == (run["run_id"], run["run_id"]), path.name
            elif pa.types.is_string(field.type):
                assert stats is None or not stats.has_min_max, (path.name, field.name)
            elif (
                pa.types.is_integer(field.type)
                and f.metadata.num_row_groups == 1
                and table[field.name].null_count < table.num_rows
            ):
                # the statistics a reader may prune on are the column's true bounds
                assert (stats.min, stats.max) == (
                    pc.min(table[field.name]).as_py(),
                    pc.max(table[field.name]).as_py(),
                ), field.name
                bounded += 1
    assert bounded >= 5  # the integer branch checked real columns (times, ids, seq) of both files


def _encodings(path) -> dict[str, tuple[str, ...]]:
    meta = pq.ParquetFile(path).metadata
    return {
        meta.schema.column(i).name: meta.row_group(0).column(i).encodings for i in range(meta.num_columns)
    }


def test_mart_measurements_are_byte_stream_split_ids_dictionary_times_delta(tmp_path):
    generate(tmp_path / "d", HiprofConfig(inferences=3))
    run, _ = build_dump(tmp_path / "wh", tmp_path / "d")
    path = own_part_file(
        Warehouse(tmp_path / "wh"), "marts", "ai_core_metrics", run["run_id"], run["build_id"]
    )
    enc = _encodings(path)
    assert "BYTE_STREAM_SPLIT" in enc["mac_ratio"] and "RLE_DICTIONARY" not in enc["mac_ratio"]
    assert "BYTE_STREAM_SPLIT" in enc["main_mem_read_bw_gbps"]
    assert "DELTA_BINARY_PACKED" in enc["ts_ns"]
    assert "RLE_DICTIONARY" in enc["op_name"] and "RLE_DICTIONARY" in enc["task_id"]


FLOATS = st.lists(
    st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=64)), max_size=300
)


@settings(max_examples=40, deadline=None)
@given(values=FLOATS, ints=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=5))
def test_float_and_integer_columns_come_back_bit_for_bit(tmp_path_factory, values, ints):
    """Byte-stream split and delta encoding lose nothing: NULL, NaN, infinities, -0.0, subnormals."""
    n = len(values)
    ints = (ints * (n // len(ints) + 1))[:n]
    table = pa.table({"x": pa.array(values, pa.float64()), "t": pa.array(ints, pa.int64())})
    path = tmp_path_factory.mktemp("p") / "f.parquet"
    with parquet_writer(path, table.schema) as w:
        w.write_table(table)
    back = pq.read_table(path)
    want = [None if v is None else struct.pack("<d", v) for v in values]
    got = [None if v is None else struct.pack("<d", v) for v in back["x"].to_pylist()]
    assert got == want
    assert back["t"].to_pylist() == ints


def test_sink_writes_text_from_its_dictionary_and_reads_back_as_the_contract(tmp_path):
    """Readers hand text over as dictionary arrays; the raw file stores that dictionary as it
    is (its order, not the first-seen order Arrow's writer gives when it hashes strings), and
    reads back with the contract's plain types and the values of every kind of input."""
    from pipeline.warehouse.contracts import contract
    from pipeline.warehouse.sink import ParquetSink

    files = pa.DictionaryArray.from_arrays(
        pa.array([1, 1, 0, 1], pa.int32()), pa.array(["z.slice_1", "a.slice_0"])
    )
    columns = {
        "device_id": pa.array([0, 0, 1, 1], pa.int32()),
        "source_file": files,  # a stream's file names, as SliceStream.source_files gives them
        "seq": pa.array([0, 1, 2, 3], pa.int64()),
        "level": "acl",  # one value for every row
        "api_name": pa.array(["aclInit", None, "aclInit", "aclFinalize"], pa.string()),  # plain text
        "item": pa.DictionaryArray.from_arrays(
            pa.array([0, None, 2, 1], pa.int32()), pa.array(["m", "n", "m"])
        ),
    }
    path = tmp_path / "api_calls.parquet"
    sink = ParquetSink({"api_calls": path})
    sink.write("api_calls", columns)
    sink.close()
    back = pq.read_table(path)
    want = contract("raw", "api_calls").schema
    assert back.schema.equals(pa.schema([f for f in want if f.name != "run_id"]))
    assert back["source_file"].to_pylist() == ["a.slice_0", "a.slice_0", "z.slice_1", "a.slice_0"]
    assert back["level"].to_pylist() == ["acl"] * 4
    assert back["api_name"].to_pylist() == ["aclInit", None, "aclInit", "aclFinalize"]
    assert back["item"].to_pylist() == ["m", None, "m", "n"]
    assert back["pid"].to_pylist() == [None] * 4  # not supplied: NULL
    stored = pq.read_table(path, columns=["source_file"], read_dictionary=["source_file"])[
        "source_file"
    ].chunk(0)
    assert stored.dictionary.to_pylist() == ["z.slice_1", "a.slice_0"]


def test_sink_gathers_a_reader_s_small_batches_into_large_row_groups(tmp_path):
    """A reader hands over a batch per data file; a dump of thousands of small slices still
    makes a few row groups of ROW_GROUP_ROWS rows (not one per slice), with every row in the
    order written and each batch's own file name (its own dictionary) kept. An aborted sink
    leaves no file, the batches it held included."""
    from pipeline.warehouse.sink import ParquetSink

    batches, rows = 3000, 100
    path = tmp_path / "api_calls.parquet"
    sink = ParquetSink({"api_calls": path})
    for b in range(batches):
        sink.write(
            "api_calls",
            {
                "device_id": pa.array([b % 2] * rows, pa.int32()),
                "source_file": pa.DictionaryArray.from_arrays(
                    pa.array([0] * rows, pa.int32()), pa.array([f"api.slice_{b}"])
                ),
                "seq": pa.array(range(b * rows, (b + 1) * rows), pa.int64()),
            },
        )
    sink.close()
    f = pq.ParquetFile(path)
    total = batches * rows
    groups = [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)]
    # 300,000 rows: two or three row groups (a group is cut at 128 Ki rows or 16 MiB), not 3,000
    assert len(groups) <= 3 and min(groups[:-1]) >= 50_000, groups
    back = f.read()
    assert back["seq"].to_pylist() == list(range(total))
    assert back["source_file"].to_pylist() == [f"api.slice_{b}" for b in range(batches) for _ in range(rows)]
    assert back["device_id"].to_pylist() == [b % 2 for b in range(batches) for _ in range(rows)]

    aborted = tmp_path / "aborted.parquet"
    sink = ParquetSink({"api_calls": aborted})
    sink.write("api_calls", {"device_id": pa.array([0], pa.int32()), "seq": pa.array([0], pa.int64())})
    sink.abort()
    assert not aborted.exists()
