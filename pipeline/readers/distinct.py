"""Per-record columns computed once per distinct value.

Record fields such as name hashes, type codes and thread ids take few distinct values over
millions of records. ``distinct`` finds them by hashing (Arrow's dictionary encoding), which
is several times faster than ``np.unique``'s sort; the few distinct values are then mapped in
Python and spread back to the records: text as a dictionary array (each record an index
into the distinct results, which the Parquet sink writes as they are), other types with one
``take``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa


def distinct(values: np.ndarray) -> tuple[list, np.ndarray]:
    """(the distinct values in first-seen order, each record's index among them).

    Fixed-width byte strings (``S<n>``) come back as ``bytes`` of that width (NULs kept).
    """
    if values.dtype.kind == "S":
        width = values.dtype.itemsize
        arr = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(width), len(values), [None, pa.py_buffer(np.ascontiguousarray(values))]
        )
    else:
        arr = pa.array(values)
    enc = arr.dictionary_encode()
    return enc.dictionary.to_pylist(), enc.indices.to_numpy()


def map_distinct(values: np.ndarray, fn: Callable, type: pa.DataType | None = None) -> pa.Array:
    """``fn(v)`` for every element as an Arrow array, ``fn`` called once per distinct value.
    Without ``type``, ``fn`` gives text (or None for NULL) and the result is a dictionary
    array of it (int32 indices, no NULL among the dictionary's values); with ``type``, a plain
    array of that type."""
    if len(values) == 0:
        return (
            pa.array([], type)
            if type is not None
            else pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.string()))
        )
    uniq, index = distinct(values)
    results = [fn(v) for v in uniq]
    if type is not None:
        return pa.array(results, type).take(pa.array(index))
    none = [i for i, r in enumerate(results) if r is None]
    mask = np.isin(index, none) if none else None
    return pa.DictionaryArray.from_arrays(
        pa.array(index.astype(np.int32), mask=mask),
        pa.array(["" if r is None else r for r in results], pa.string()),
    )


def merge_by_mask(mask: np.ndarray, where_true: pa.Array, where_false: pa.Array) -> pa.Array:
    """One array as long as ``mask``: ``where_true``'s values in order at its True places,
    ``where_false``'s at the others (for fields whose meaning depends on another field).
    Text given once as a dictionary array and once as plain text comes back as a dictionary."""
    if where_true.type != where_false.type:
        where_true, where_false = (
            a if pa.types.is_dictionary(a.type) else a.dictionary_encode() for a in (where_true, where_false)
        )
    order = np.concatenate([np.flatnonzero(mask), np.flatnonzero(~mask)])
    position = np.empty(len(mask), np.int64)
    position[order] = np.arange(len(mask))
    return pa.concat_arrays([where_true, where_false]).take(pa.array(position))
