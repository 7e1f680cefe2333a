"""Rows of exported tables that share a key (docs/formats.md#export-keys).

The build keeps one row per key of an exported table (``stg_export_ops``: one execution per
device, stream, task, start and context; ``stg_api_totals``, ``stg_step_times``: one row per
API or step), so a second row under a key would vanish there. ``KeyCheck`` stands between an
export's readers and the sink, keeps a 64-bit hash of each checked row's key and of its
content (with its file and row), and once every file is read reports what the build will not
keep:

* a row identical to the first of its key (a copy: the exporter wrote it twice, or two files
  hold it): counted in one ``duplicate_row`` issue per table and file; nothing is lost;
* a row whose content differs from the first of its key: ``bad_row``, a loss; the build keeps
  the first (but step keypoints, ``KEPT_WHEN_DIFFERENT``: at another time they make an
  iteration of their own, so nothing is lost and nothing reported).

"First" is the order of the files and rows read (source file, then row), the order in which
the build chooses. The hashes keep memory at 28 bytes a row whatever the row holds (a large
database's PMU values are tens of millions of rows); two different keys or contents taking the
same 64-bit hash is a chance of about n^2 / 2^65 for n rows (1 in 40,000 at 30 million).
"""

from __future__ import annotations

import zlib
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
    # a keypoint of a step (database STEP_TIME, timeline ProfilerStep / Iteration events)
    "step_trace": ("device_id", "model_id", "index_id", "tag_id"),
}
# tables whose rows with other values under one key are all kept by the build (a step's
# keypoints at other times make an iteration of their own, numbered in time order): only their
# exact copies, which the step-trace rule passes over, are reported
KEPT_WHEN_DIFFERENT = {"step_trace"}
WHAT = {
    "task_runs": "execution",
    "task_ops": "operator description",
    "task_metrics": "PMU value",
    "api_totals": "API total",
    "step_times": "step",
    "step_trace": "step keypoint",
}
_NOT_CONTENT = ("source_file", "seq")
_NULL_KEY = np.uint64(0x6E756C6C6B6579)  # a NULL key value: a value of its own
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, element-wise on uint64 (wrapping)."""
    x = x.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= _M1
        x ^= x >> np.uint64(27)
        x *= _M2
        x ^= x >> np.uint64(31)
    return x


def _salt(name: str) -> np.uint64:
    return np.uint64(zlib.crc32(name.encode()) | (zlib.crc32(name[::-1].encode()) << 32))


class KeyCheck:
    """A sink that passes every write on and remembers the key and content hashes of KEYS' tables."""

    def __init__(self, sink, offset=None):
        """``offset(source_file, seq)``: the byte offset of a row in its file, where known."""
        self.sink = sink
        self.offset = offset or (lambda source_file, seq: None)
        self.parts: dict[str, list[tuple[np.ndarray, ...]]] = defaultdict(list)
        self.texts: dict[str, int] = {}  # every text value seen -> its id (1, 2, ...)
        self.files: list[str] = []

    def write(self, table: str, columns: dict) -> None:
        self.sink.write(table, columns)
        keys = KEYS.get(table)
        if keys is None:
            return
        cols = {k: v for k, v in columns.items() if v is not None}
        n = next(len(v) for v in cols.values() if not isinstance(v, str))
        if not n:
            return
        key = np.zeros(n, np.uint64)
        content = np.zeros(n, np.uint64)
        for name in keys:
            values, valid = self._values(cols.get(name), n)
            key ^= _mix(np.where(valid, values, _NULL_KEY) ^ _salt(name))
        for name, v in cols.items():
            if name in keys or name in _NOT_CONTENT:
                continue
            values, valid = self._values(v, n)  # a NULL adds nothing: as the column's absence
            content ^= np.where(valid, _mix(values ^ _salt(name)), np.uint64(0))
        source = cols["source_file"]
        if source not in self.files:
            self.files.append(source)
        seq = np.asarray(
            cols["seq"].to_numpy(zero_copy_only=False) if isinstance(cols["seq"], pa.Array) else cols["seq"]
        )
        self.parts[table].append(
            (key, content, seq.astype(np.int64), np.full(n, self.files.index(source), np.int32))
        )

    def _values(self, v, n: int) -> tuple[np.ndarray, np.ndarray]:
        """A column as uint64 values and a validity mask: integers as they are, floats by their
        bits, texts by an id of this check."""
        if v is None:
            return np.zeros(n, np.uint64), np.zeros(n, bool)
        if isinstance(v, str):
            return np.full(n, self._id(v), np.uint64), np.ones(n, bool)
        a = v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v
        if not isinstance(a, pa.Array):
            a = pa.array(a)
        valid = np.asarray(pc.is_valid(a).to_numpy(zero_copy_only=False), dtype=bool)
        t = a.type
        if pa.types.is_dictionary(t):
            a, t = a.cast(t.value_type), t.value_type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
            enc = pc.dictionary_encode(a)
            ids = np.array([self._id(s) for s in enc.dictionary.to_pylist()] or [0], np.uint64)
            idx = np.asarray(pc.fill_null(enc.indices, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
            return ids[idx], valid
        if pa.types.is_floating(t):
            f = np.asarray(
                pc.fill_null(pc.cast(a, pa.float64()), 0.0).to_numpy(zero_copy_only=False), np.float64
            )
            return f.view(np.uint64), valid
        if pa.types.is_integer(t) or pa.types.is_boolean(t):
            i = np.asarray(pc.fill_null(pc.cast(a, pa.int64()), 0).to_numpy(zero_copy_only=False), np.int64)
            return i.view(np.uint64), valid
        # anything else (lists): by its text
        return self._values(_as_text(a), n)

    def _id(self, s) -> int:
        return self.texts.setdefault(s, len(self.texts) + 1)

    def report(self, log) -> None:
        for table, parts in self.parts.items():
            key, content, seq, file = (np.concatenate(c) for c in zip(*parts))
            _report(table, key, content, seq, file, self.files, log, self.offset)
        self.parts.clear()


def _as_text(a: pa.Array) -> pa.Array:
    return pa.array([None if x is None else repr(x) for x in a.to_pylist()], pa.string())


def _report(table, key, content, seq, file, files, log, offset) -> None:
    n = len(key)
    if n < 2:
        return
    order = np.lexsort((np.arange(n), key))  # by key, then the order read
    key, content, seq, file = key[order], content[order], seq[order], file[order]
    repeat = np.concatenate([[False], key[1:] == key[:-1]])
    if not repeat.any():
        return
    # each row's group starts at the last row before it that is no repeat
    first = np.maximum.accumulate(np.where(repeat, 0, np.arange(n)))
    differs = repeat & (content != content[first])
    copies = repeat & ~differs
    if table in KEPT_WHEN_DIFFERENT:
        differs = np.zeros(n, bool)
    what = WHAT[table]
    key_text = ", ".join(k.removesuffix("_id").removesuffix("_ns") for k in KEYS[table])
    for mask, kind in ((copies, "duplicate_row"), (differs, "bad_row")):
        by_file: dict[int, list[int]] = defaultdict(list)
        for i in np.flatnonzero(mask):
            by_file[int(file[i])].append(int(i))
        for f, rows in sorted(by_file.items()):
            i, j = rows[0], int(first[rows[0]])
            where = (
                f"e.g. seq {int(seq[i])} of {files[f]}, the first seq {int(seq[j])} of {files[int(file[j])]}"
            )
            if kind == "duplicate_row":
                msg = (
                    f"{len(rows)} {table} row(s) repeat an earlier {what} exactly (same {key_text} "
                    f"and values; {where}): kept once"
                )
            else:
                msg = (
                    f"{len(rows)} {table} row(s) share the {key_text} of an earlier {what} with "
                    f"other values ({where}): only the first is kept, the others are lost"
                )
            log.add(Issue(files[f], kind, msg, count=len(rows), byte_offset=offset(files[f], int(seq[i]))))
