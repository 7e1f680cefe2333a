"""Writing canonical tables: column dicts from the readers, through the contracts, into Parquet."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.warehouse.contracts import Contract, contract

# Text columns travel from the readers to the Parquet writer as dictionary arrays: a reader's
# names are few distinct values (pipeline.readers.distinct) and the file a record came from is
# one of a stream's few files, so a batch carries an index per record and each text once, and
# Arrow's writer stores the dictionary and the indices as they are instead of hashing a
# string per record. The files hold plain Parquet text (``store_schema=False``: no Arrow-only
# schema), so every reader, pyarrow included, reads the contract's types.
TEXT = pa.dictionary(pa.int32(), pa.string())


def to_table(c: Contract, columns: dict) -> pa.Table:
    """A table of the contract's columns, text as dictionary arrays (``TEXT``); columns the
    reader did not supply are NULL, and a column given as one string holds it on every row.
    Text given as plain strings is left to ``as_stored`` (the writer's thread encodes it)."""
    n = next((len(v) for v in columns.values() if not isinstance(v, str)), 0)
    arrays = []
    for col in c.columns:
        if col.name == "run_id" and c.name != "runs":
            continue
        v = columns.get(col.name)
        t = col.arrow_type
        text = pa.types.is_string(t)
        if v is None:
            arrays.append(pa.nulls(n, TEXT if text else t))
        elif isinstance(v, str):  # one value for every row
            arrays.append(
                pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([v], t))
                if text
                else pa.repeat(pa.scalar(v, t), n)
            )
        elif text and isinstance(v, pa.DictionaryArray):
            arrays.append(v.cast(TEXT))
        elif isinstance(v, (pa.Array, pa.ChunkedArray)):
            arrays.append(v.cast(t))
        elif isinstance(v, np.ndarray) and v.dtype != object:
            arrays.append(pa.array(v).cast(t))
        else:
            arrays.append(pa.array(list(v) if not isinstance(v, np.ndarray) else v, t))
    names = [col.name for col in c.columns if not (col.name == "run_id" and c.name != "runs")]
    return pa.Table.from_arrays(arrays, names=names)


def with_run_id(t, run_id: str | None):
    """``t`` (a table or batch) with a first column ``run_id`` holding ``run_id`` on every row:
    every part file names the run of each row, so a file may hold several runs (compaction)
    and every Parquet reader sees the run without a folder convention."""
    if run_id is None:
        return t
    col = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(t.num_rows, np.int32)), pa.array([run_id], pa.string())
    )
    if isinstance(t, pa.RecordBatch):
        return pa.RecordBatch.from_arrays([col, *t.columns], names=["run_id", *t.schema.names])
    return t.add_column(0, "run_id", col)


def as_stored(t: pa.Table) -> pa.Table:
    """``t`` with its plain text columns dictionary-encoded (``TEXT``), as the sink's writers
    take them."""
    for i, field in enumerate(t.schema):
        if pa.types.is_string(field.type):
            t = t.set_column(i, field.name, t.column(i).dictionary_encode())
    return t


def parquet_writer(path: Path, schema: pa.Schema) -> pq.ParquetWriter:
    """The warehouse's Parquet settings. 64-bit integer columns (times, sequence numbers,
    counters, ids) are delta-encoded: they are near-sorted or wide, where dictionary encoding
    is tried, fills up and is dropped again for every row group; the other columns
    (device, stream and task ids, names, kinds) are dictionary-encoded. Against zstd with
    Arrow's defaults this halves the encoding time and shrinks the files.

    Floating-point columns (ratios, times in us, bandwidths) are byte-stream-split, not
    dictionary-encoded: measurements of tasks are nearly all distinct, and a row group's
    dictionary then holds every value once more (slower to write and to read, and larger).

    Min/max statistics are written for every column but text ones: comparing every string
    of a batch costs a large share of the encoding time, and a row group holds many names,
    so their min/max would hardly ever let a query skip it. ``run_id`` is the exception: a
    file of compacted runs is sorted by it, and a query of one run skips the other row groups.

    Columns given as dictionary arrays (the raw tables' text, ``TEXT``) are written as
    Parquet text from their dictionary and indices, and the file keeps no Arrow schema
    of its own: it reads back as the contract's plain types."""
    encoding = {f.name: "DELTA_BINARY_PACKED" for f in schema if f.type in (pa.int64(), pa.uint64())}
    encoding |= {f.name: "BYTE_STREAM_SPLIT" for f in schema if pa.types.is_floating(f.type)}
    stats = [f.name for f in schema if not _is_text(f.type) or f.name == "run_id"]
    return pq.ParquetWriter(
        path,
        schema,
        compression="zstd",
        use_dictionary=[f.name for f in schema if f.name not in encoding],
        column_encoding=encoding,
        write_statistics=stats,
        store_schema=not any(pa.types.is_dictionary(f.type) for f in schema),
    )


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _is_text(t.value_type)
    if pa.types.is_dictionary(t):
        return _is_text(t.value_type)
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)


class ParquetSink:
    """One Parquet file per table, written row group by row group as batches arrive.

    Readers decode while a writer thread encodes: ``write`` hands the typed batch to a
    bounded queue (at most ``QUEUE_BATCHES`` batches wait, so memory stays bounded) and
    returns. Parquet encoding releases the GIL, so on two cores decoding and writing overlap.
    An error in the writer thread is raised by the next ``write`` or by ``close``. A table's
    batches are held until they make a row group of ``ROW_GROUP_ROWS`` rows (or
    ``ROW_GROUP_BYTES``): a reader hands over a batch per data file, and a dump of thousands
    of small slices would otherwise write thousands of tiny row groups, which every later
    read of the file pays for (docs/architecture.md#canonical-tables).
    ``derive`` maps a table to a function that adds columns computed over the batches in
    the order they are written (e.g. task instance numbers); it runs in the caller's thread,
    before the batch is queued.
    """

    QUEUE_BATCHES = 2
    ROW_GROUP_ROWS = 128 * 1024
    ROW_GROUP_BYTES = 16 << 20

    def __init__(
        self,
        paths: dict[str, Path],
        layer: str = "raw",
        derive: dict[str, Callable[[dict], dict]] | None = None,
        run_id: str | None = None,
    ):
        self.paths = paths
        self.run_id = run_id  # written as every row's first column
        self.derive = derive or {}
        self.layer = layer
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.rows: dict[str, int] = {t: 0 for t in paths}
        self._queue: queue.Queue = queue.Queue(self.QUEUE_BATCHES)
        self._held: dict[str, list] = {}  # by table: the batches not written yet, their rows and bytes
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="parquet-sink", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if self._error is not None:
                if item is None:
                    return
                continue  # keep draining so the producer never blocks on a dead writer
            try:
                if item is None:
                    for table in list(self._held):
                        self._flush(table)
                    return
                table, t = item
                t = as_stored(t)
                held = self._held.setdefault(table, [[], 0, 0])  # batches, rows, bytes
                held[0].append(t)
                held[1] += t.num_rows
                held[2] += t.get_total_buffer_size()
                if held[1] >= self.ROW_GROUP_ROWS or held[2] >= self.ROW_GROUP_BYTES:
                    self._flush(table)
            except BaseException as e:  # noqa: BLE001 - handed to the producing thread
                self._error = e
                if item is None:
                    return

    def _flush(self, table: str) -> None:
        """Write a table's held batches as one row group."""
        held = self._held.pop(table, [[]])[0]
        if not held:
            return
        if table not in self.writers:
            path = self.paths[table]
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writers[table] = parquet_writer(path, held[0].schema)
        # (a batch larger than Arrow's row group limit is cut into row groups by the writer)
        self.writers[table].write_table(
            pa.concat_tables(held).unify_dictionaries() if len(held) > 1 else held[0]
        )

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def write(self, table: str, columns: dict) -> None:
        self._raise()
        if table in self.derive:
            columns = self.derive[table](columns)
        c = contract(self.layer, table)
        t = with_run_id(to_table(c, columns), self.run_id)
        self._queue.put((table, t))
        self.rows[table] += t.num_rows

    def _stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def close(self) -> None:
        """Close every writer; a table that got no rows still gets a file with its schema."""
        self._stop()
        self._raise()
        for table, path in self.paths.items():
            if table in self.writers:
                self.writers[table].close()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                empty = as_stored(with_run_id(to_table(contract(self.layer, table), {}), self.run_id))
                with parquet_writer(path, empty.schema) as w:
                    w.write_table(empty)
        self.writers.clear()

    def abort(self) -> None:
        if self._error is None:  # the batches held are not written
            self._error = RuntimeError("the sink was aborted")
        self._stop()
        for w in self.writers.values():
            try:
                w.close()
            except Exception:  # noqa: BLE001 - best effort while failing anyway
                pass
        for path in self.paths.values():
            path.unlink(missing_ok=True)
