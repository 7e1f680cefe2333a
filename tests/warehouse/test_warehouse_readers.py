"""Every warehouse folder reads in pandas and Polars (as users point them at it), with the
same columns and types as DuckDB gives; commit records of older warehouses are upgraded."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.jobs.runner import run_roots
from pipeline.warehouse.store import Warehouse

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


def _kind(t: pa.DataType) -> str:
    """A type as the readers may spell it differently: text, dictionary-encoded or not."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return f"list<{_kind(t.value_type)}>"
    if pa.types.is_timestamp(t):  # DuckDB names UTC Etc/UTC
        return f"timestamp[{t.unit}, tz={'UTC' if t.tz in ('Etc/UTC', '+00:00') else t.tz}]"
    return str(t)


def _folders(root: Path) -> list[Path]:
    return [root / "runs"] + sorted(p for layer in ("raw", "marts") for p in (root / layer).iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    from tests.helpers.history import build_history

    wh, _ = build_history(tmp_path_factory.mktemp("rd"), [{"seed": 1}, {"seed": 2, "devices": 2}])
    return wh


def test_every_folder_reads_in_pandas_and_polars_with_the_same_types(wh):
    import duckdb

    for folder in _folders(wh.path):
        files = sorted(folder.glob("run_id=*/*.parquet"))
        if not files:
            continue
        frame = pd.read_parquet(folder)  # pandas' own hive discovery of the folder
        lazy = pl.read_parquet(folder / "**" / "*.parquet", hive_partitioning=True)
        glob = str(folder / "*" / "*.parquet")
        ddb = duckdb.sql(f"select * from read_parquet('{glob}', hive_partitioning = true, union_by_name = true)").to_arrow_table()
        typed = pd.read_parquet(folder, dtype_backend="pyarrow")  # the Arrow type of each column
        pandas_types = {name: _kind(t.pyarrow_dtype) for name, t in typed.dtypes.items()}
        polars_types = {f.name: _kind(f.type) for f in lazy.to_arrow().schema}
        duck_types = {f.name: _kind(f.type) for f in ddb.schema}
        assert len(frame) == lazy.height == ddb.num_rows, folder
        assert pandas_types == polars_types == duck_types, folder
        assert pandas_types["run_id"] == "string"
        if len(frame):
            assert set(frame["run_id"].astype(str)) <= {f.parent.name.split("=", 1)[1] for f in files}


def test_commit_records_of_an_older_warehouse_are_upgraded(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [SAMPLE])
    f = wh.run_file(o.run_id)
    assert "run_id" not in pq.read_schema(f).names
    # what an older profetl wrote: run_id as a column of run.parquet too
    old = pq.read_table(f)
    pq.write_table(old.add_column(0, "run_id", pa.array([o.run_id])), f)
    with pytest.raises(Exception):
        pd.read_parquet(wh.path / "runs")
    assert wh.run(o.run_id)["run_id"] == o.run_id and [r["run_id"] for r in wh.runs()] == [o.run_id]
    with wh.writer():
        assert wh.upgraded == 1
    assert "run_id" not in pq.read_schema(f).names
    assert pq.read_table(f).equals(old)
    assert list(pd.read_parquet(wh.path / "runs")["run_id"].astype(str)) == [o.run_id]
