"""Every warehouse folder reads in pandas and Polars (as users point them at it), with the
same columns and types as DuckDB gives; per-run commit records of older warehouses are
migrated into the run index."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.errors import WarehouseNeedsUpgrade
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
    if pa.types.is_map(t):  # the run index's tags (pandas names the map's field, Polars uses large text)
        return f"map<{_kind(t.key_type)}, {_kind(t.item_type)}>"
    if pa.types.is_struct(t):  # the run index's files
        return "struct<" + ", ".join(f"{f.name}: {_kind(f.type)}" for f in t) + ">"
    if pa.types.is_timestamp(t):  # DuckDB names UTC Etc/UTC
        return f"timestamp[{t.unit}, tz={'UTC' if t.tz in ('Etc/UTC', '+00:00') else t.tz}]"
    return str(t)


def _folders(root: Path) -> list[Path]:
    return [root / "runs"] + sorted(
        p for layer in ("raw", "marts") for p in (root / layer).iterdir() if p.is_dir()
    )


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    from tests.helpers.history import build_history

    wh, _ = build_history(tmp_path_factory.mktemp("rd"), [{"seed": 1}, {"seed": 2, "devices": 2}])
    return wh


def test_every_folder_reads_in_pandas_and_polars_with_the_same_types(wh):
    import duckdb

    run_ids = set(wh.run_index().run_ids())
    assert len(run_ids) == 2
    read = 0
    for folder in _folders(wh.path):
        files = sorted(folder.glob("*.parquet"))
        if not files:
            continue
        read += 1
        frame = pd.read_parquet(folder)  # pandas' own reading of the folder
        lazy = pl.read_parquet(folder / "*.parquet")
        glob = str(folder / "*.parquet")
        ddb = duckdb.sql(f"select * from read_parquet('{glob}', union_by_name = true)").to_arrow_table()
        typed = pd.read_parquet(folder, dtype_backend="pyarrow")  # the Arrow type of each column
        pandas_types = {name: _kind(t.pyarrow_dtype) for name, t in typed.dtypes.items()}
        polars_types = {f.name: _kind(f.type) for f in lazy.to_arrow().schema}
        duck_types = {f.name: _kind(f.type) for f in ddb.schema}
        assert len(frame) == lazy.height == ddb.num_rows, folder
        assert pandas_types == polars_types == duck_types, folder
        assert pandas_types["run_id"] == "string"
        if len(frame):
            assert set(frame["run_id"].astype(str)) <= run_ids
        if folder.name == "runs":
            assert set(frame["run_id"].astype(str)) == run_ids
    assert read > 20  # the runs index and every table's folder


@pytest.mark.parametrize("record", ["run_id_column", "folder_key_only"])
def test_per_run_commit_records_are_migrated_into_the_index(tmp_path, record):
    """Both kinds of per-run record an older profetl wrote (run_id as a column too, which made
    pandas refuse the runs folder; or the folder's key and the file's metadata only) become
    rows of the run index at the first writer (a reader before it is refused), and the runs
    folder reads in pandas."""
    from pipeline.warehouse.upgrade import owned_by
    from tests.warehouse.test_upgrade import to_old_layout

    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [SAMPLE])
    before = wh.run_index().run_record(o.run_id)
    to_old_layout(wh)  # runs/run_id=<id>/run.parquet with a run_id column
    f = wh.path / "runs" / f"run_id={o.run_id}" / "run.parquet"
    if record == "run_id_column":
        with pytest.raises(pa.ArrowTypeError):
            pd.read_parquet(wh.path / "runs")
    else:
        pq.write_table(owned_by(pq.read_table(f).drop_columns(["run_id"]), o.run_id), f)
    with pytest.raises(WarehouseNeedsUpgrade):  # no reader reads it as it is
        wh.run_index()
    with wh.writer() as w:
        assert w.migrated == 1
    assert not f.exists() and wh.index_file.exists()
    assert wh.run_index().run_record(o.run_id) == before
    assert list(pd.read_parquet(wh.path / "runs")["run_id"].astype(str)) == [o.run_id]
    assert pl.read_parquet(wh.path / "runs" / "*.parquet")["run_id"].to_list() == [o.run_id]
