"""The warehouse's Parquet files: min/max statistics on numbers and times, none on text."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse import Warehouse
from tests.built import build_dump


def test_raw_and_mart_files_keep_statistics_for_numbers_only(tmp_path):
    generate(tmp_path / "d", HiprofConfig(inferences=3))
    run, _ = build_dump(tmp_path / "wh", tmp_path / "d")
    wh = Warehouse(tmp_path / "wh")
    files = [wh.part("raw", "api_calls", run["run_id"], run["ingest_id"]),
             wh.part("marts", "op_summary", run["run_id"], run["build_id"])]
    bounded = 0
    for path in files:
        f = pq.ParquetFile(path)
        table = f.read()
        assert table.num_rows > 0, path
        group = f.metadata.row_group(0)
        for i, field in enumerate(f.schema_arrow):
            stats = group.column(i).statistics
            if pa.types.is_string(field.type):
                assert stats is None or not stats.has_min_max, (path.name, field.name)
            elif pa.types.is_integer(field.type) and f.metadata.num_row_groups == 1 and table[field.name].null_count < table.num_rows:
                # the statistics a reader may prune on are the column's true bounds
                assert (stats.min, stats.max) == (pc.min(table[field.name]).as_py(), pc.max(table[field.name]).as_py()), field.name
                bounded += 1
    assert bounded >= 5  # the integer branch checked real columns (times, ids, seq) of both files
