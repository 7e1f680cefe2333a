"""Rows of exported tables that share a key (docs/formats.md#export-keys).

The build keeps one row per key of an exported table (``stg_export_ops``: one execution per
device, stream, task, start and context; ``stg_api_totals``, ``stg_step_times``: one row per
API or step), so a second row under a key would vanish there. ``KeyCheck`` stands between an
export's readers and the sink, keeps each checked row's key and content, and once every file
is read reports what the build will not keep:

* a row identical to the first of its key (a copy: the exporter wrote it twice, or two files
  hold it): counted in one ``duplicate_row`` issue per table and file; nothing is lost;
* a row whose content differs from the first of its key: ``bad_row``, a loss, with an example
  key and the values that differ; the build keeps the first.

"First" is the order of the files and rows read (source file, then row), the order in which
the build chooses.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.readers.issues import Issue

# table -> key columns; every other column but source_file and seq is its content. A NULL
# context is a value ("none"), as the build's coalesce(context_id, -1).
KEYS: dict[str, tuple[str, ...]] = {
    "task_runs": ("device_id", "stream_id", "task_id", "start_ns", "context_id"),
    "task_ops": ("device_id", "stream_id", "task_id", "start_ns", "context_id"),
    "task_metrics": ("device_id", "stream_id", "task_id", "start_ns", "context_id", "metric"),
    "api_totals": ("device_id", "level", "api_name"),
    "step_times": ("device_id", "step_id"),
}
WHAT = {
    "task_runs": "execution",
    "task_ops": "operator description",
    "task_metrics": "PMU value",
    "api_totals": "API total",
    "step_times": "step",
}
_NOT_CONTENT = ("source_file", "seq")
_NULL = "\x00null"


class KeyCheck:
    """A sink that passes every write on and remembers the key and content of KEYS' tables."""

    def __init__(self, sink, offset=None):
        """``offset(source_file, seq)``: the byte offset of a row in its file, where known."""
        self.sink = sink
        self.offset = offset or (lambda source_file, seq: None)
        self.parts: dict[str, list[pa.Table]] = defaultdict(list)

    def write(self, table: str, columns: dict) -> None:
        self.sink.write(table, columns)
        keys = KEYS.get(table)
        if keys is None:
            return
        cols = {k: v for k, v in columns.items() if v is not None}
        n = next(len(v) for v in cols.values() if not isinstance(v, str))
        if not n:
            return

        def array(v) -> pa.Array:
            if isinstance(v, str):
                return pa.array([v] * n, pa.string())
            if isinstance(v, pa.ChunkedArray):
                return v.combine_chunks()
            return v if isinstance(v, pa.Array) else pa.array(v)

        arrays = {k: array(v) for k, v in cols.items()}
        content = [k for k in sorted(arrays) if k not in keys and k not in _NOT_CONTENT]
        text = [pc.fill_null(pc.cast(arrays[k], pa.string()), _NULL) for k in content]
        joined = pc.binary_join_element_wise(*text, "\x1f") if text else pa.array([""] * n, pa.string())
        self.parts[table].append(
            pa.table(
                {
                    **{k: (arrays[k] if k in arrays else pa.nulls(n)) for k in keys},
                    "_content": joined,
                    "_names": pa.array(["\x1f".join(content)] * n, pa.string()),
                    "source_file": arrays["source_file"],
                    "seq": pc.cast(arrays["seq"], pa.int64()),
                }
            )
        )

    def report(self, log) -> None:
        for table, parts in self.parts.items():
            _report(table, pa.concat_tables(parts, promote_options="permissive"), log, self.offset)
        self.parts.clear()


def _as_key(a: pa.ChunkedArray) -> np.ndarray:
    a = a.combine_chunks()
    if pa.types.is_integer(a.type):
        return np.asarray(pc.fill_null(pc.cast(a, pa.int64()), -(2**63)).to_numpy(zero_copy_only=False))
    return np.asarray(
        pc.fill_null(pc.cast(a, pa.string()), _NULL).to_numpy(zero_copy_only=False), dtype=object
    )


def _report(table: str, t: pa.Table, log, offset) -> None:
    keys = KEYS[table]
    t = t.append_column("_order", pa.array(np.arange(t.num_rows, dtype=np.int64)))
    t = t.sort_by([(k, "ascending") for k in keys] + [("_order", "ascending")])
    cols = [_as_key(t.column(k)) for k in keys]
    n = t.num_rows
    if n < 2:
        return
    same = np.ones(n - 1, dtype=bool)
    for c in cols:
        same &= c[1:] == c[:-1]
    if not same.any():
        return
    repeat = np.concatenate([[False], same])
    # each row's group starts at the last row that is no repeat before it
    first = np.maximum.accumulate(np.where(repeat, 0, np.arange(n)))
    content = np.asarray(t.column("_content").to_numpy(zero_copy_only=False), dtype=object)
    differs = repeat & (content != content[first])
    copies = repeat & ~differs
    files = np.asarray(t.column("source_file").to_numpy(zero_copy_only=False), dtype=object)
    seqs = t.column("seq").to_numpy(zero_copy_only=False)
    names = t.column("_names").to_numpy(zero_copy_only=False)
    what = WHAT[table]
    key_text = ", ".join(k.removesuffix("_id").removesuffix("_ns") for k in keys)
    for mask, kind in ((copies, "duplicate_row"), (differs, "bad_row")):
        by_file: dict[str, list[int]] = defaultdict(list)
        for i in np.flatnonzero(mask):
            by_file[files[i]].append(int(i))
        for f, rows in sorted(by_file.items()):
            i = rows[0]
            j = int(first[i])
            eg = ", ".join(f"{k} {_show(cols[c][i])}" for c, k in enumerate(keys))
            where = f"seq {int(seqs[i])} of {f}, the first seq {int(seqs[j])} of {files[j]}"
            if kind == "duplicate_row":
                msg = (
                    f"{len(rows)} {table} row(s) repeat an earlier {what} exactly (same {key_text} "
                    f"and values; e.g. {eg}, {where}): kept once"
                )
            else:
                diff = _difference(names[i], content[j], content[i])
                msg = (
                    f"{len(rows)} {table} row(s) share the {key_text} of an earlier {what} with "
                    f"other values (e.g. {eg}, {where}: {diff}): only the first is kept, the "
                    "others are lost"
                )
            log.add(Issue(f, kind, msg, count=len(rows), byte_offset=offset(f, int(seqs[i]))))


def _show(v) -> str:
    if isinstance(v, (int, np.integer)) and v == -(2**63):
        return "none"
    return "none" if v == _NULL else str(v)


def _difference(names: str, a: str, b: str) -> str:
    out = []
    for name, x, y in zip(names.split("\x1f"), a.split("\x1f"), b.split("\x1f")):
        if x != y:
            out.append(f"{name} {_show(x)} there, {_show(y)} here")
    return "; ".join(out[:3]) or "values differ"
