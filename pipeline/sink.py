"""Writing canonical tables: column dicts from the readers, through the contracts, into Parquet."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.contracts import Contract, contract


def to_table(c: Contract, columns: dict) -> pa.Table:
    """A contract-typed table; columns the reader did not supply are NULL, and a column
    given as one string holds it on every row."""
    n = next((len(v) for v in columns.values() if not isinstance(v, str)), 0)
    arrays = []
    for col in c.columns:
        if col.name == "run_id" and c.name != "runs":
            continue
        v = columns.get(col.name)
        t = col.arrow_type
        if v is None:
            arrays.append(pa.nulls(n, t))
        elif isinstance(v, str):  # one value for every row
            arrays.append(pa.repeat(pa.scalar(v, t), n))
        elif isinstance(v, (pa.Array, pa.ChunkedArray)):
            arrays.append(v.cast(t))
        elif isinstance(v, np.ndarray) and v.dtype != object:
            arrays.append(pa.array(v).cast(t))
        else:
            arrays.append(pa.array(list(v) if not isinstance(v, np.ndarray) else v, t))
    names = [col.name for col in c.columns if not (col.name == "run_id" and c.name != "runs")]
    return pa.Table.from_arrays(arrays, names=names)


class ParquetSink:
    """One Parquet file per table, written row group by row group as batches arrive."""

    def __init__(self, paths: dict[str, Path], layer: str = "raw"):
        self.paths = paths
        self.layer = layer
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.rows: dict[str, int] = {t: 0 for t in paths}

    def write(self, table: str, columns: dict) -> None:
        c = contract(self.layer, table)
        t = to_table(c, columns)
        if table not in self.writers:
            path = self.paths[table]
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writers[table] = pq.ParquetWriter(path, t.schema, compression="zstd")
        self.writers[table].write_table(t)
        self.rows[table] += t.num_rows

    def close(self) -> None:
        """Close every writer; a table that got no rows still gets a file with its schema."""
        for table, path in self.paths.items():
            if table in self.writers:
                self.writers[table].close()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                empty = to_table(contract(self.layer, table), {})
                pq.write_table(empty, path, compression="zstd")
        self.writers.clear()

    def abort(self) -> None:
        for w in self.writers.values():
            try:
                w.close()
            except Exception:  # noqa: BLE001 - best effort while failing anyway
                pass
        for path in self.paths.values():
            path.unlink(missing_ok=True)
