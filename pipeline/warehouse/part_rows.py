"""The rows of part files: read a part's rows of some runs in the shape of its table's
contract, and give a table a run_id column. Shared by the writer, compaction and the check."""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import DamagedPart
from pipeline.lazy import lazy

pa = lazy("pyarrow")
pc = lazy("pyarrow.compute")
pq = lazy("pyarrow.parquet")


def reason(e: BaseException) -> str:
    return getattr(e, "strerror", None) or (str(e).splitlines() or [type(e).__name__])[0]


def with_run(t: pa.Table, run_id: str) -> pa.Table:
    col = (
        pa.array([run_id] * t.num_rows, pa.string())
        if t.num_rows < 16
        else pa.DictionaryArray.from_arrays(pa.array([0] * t.num_rows, pa.int32()), pa.array([run_id])).cast(
            pa.string()
        )
    )
    if "run_id" in t.column_names:
        return t.set_column(t.column_names.index("run_id"), "run_id", col)
    return t.add_column(0, "run_id", col)


def conform(t, schema: pa.Schema, run_id: str | None):
    """``t`` (a table or batch) with exactly ``schema``'s columns: missing ones NULL, types cast."""
    names = t.schema.names
    cols = []
    for f in schema:
        if f.name == "run_id" and run_id is not None:
            cols.append(pa.array([run_id] * t.num_rows, pa.string()))
        elif f.name in names:
            col = t.column(names.index(f.name))
            cols.append(col.cast(f.type) if col.type != f.type else col)
        else:
            cols.append(pa.nulls(t.num_rows, f.type))
    if isinstance(t, pa.RecordBatch):
        return pa.RecordBatch.from_arrays(cols, schema=schema)
    return pa.Table.from_arrays(cols, schema=schema)


def batches(f: Path, run_ids: list[str], schema: pa.Schema):
    """The rows of ``run_ids`` in part file ``f``, as batches of ``schema``; DamagedPart when
    the file cannot be read (what its reader raises, never what the caller does with a batch)."""
    try:
        pf = pq.ParquetFile(f)
        batches = pf.iter_batches(batch_size=65_536)
        wanted = pa.array(sorted(set(run_ids)), pa.string())
        while True:
            try:
                b = next(batches)
            except StopIteration:
                return
            if b.num_rows:
                b = b.filter(pc.is_in(b.column(b.schema.get_field_index("run_id")), value_set=wanted))
                b = conform(b, schema, None) if b.num_rows else b
            if b.num_rows:
                yield b
    except (OSError, pa.ArrowException, KeyError) as e:
        raise DamagedPart(f, reason(e) if not isinstance(e, KeyError) else f"no column {e}") from None


def files_bytes(files) -> int:
    """The bytes of ``files`` on disk; a file gone meanwhile counts 0."""
    total = 0
    for f in files:
        try:
            total += f.stat().st_size
        except FileNotFoundError:
            pass
    return total


def distinct_values(files, column: str, run_id: str) -> list:
    """The distinct values (NULL left out) of ``column`` in ``files``: of ``run_id``'s rows in
    a file with a run_id column, of every row in one without (profetl 0.2's per-run files).
    A file gone, or without the column, adds none."""
    values: set = set()
    for f in files:
        if not f.exists():
            continue
        names = pq.read_schema(f).names
        if column not in names:
            continue
        t = pq.read_table(f, columns=[c for c in ("run_id", column) if c in names])
        col = t.column(column)
        if "run_id" in names:
            col = col.filter(pc.equal(t.column("run_id"), run_id))
        values |= set(pc.unique(col).to_pylist())
    return sorted(v for v in values if v is not None)
