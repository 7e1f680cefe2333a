"""Fixed-width name fields to Arrow strings, decoding each distinct value once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.readers.issues import Issue, IssueLog


def decode_names(raw: np.ndarray) -> pa.Array:
    """``S<n>`` values, cut at the first NUL, as UTF-8 strings (invalid bytes replaced)."""
    if len(raw) == 0:
        return pa.array([], pa.string())
    uniq, inverse = np.unique(raw, return_inverse=True)
    text = [u.split(b"\0", 1)[0].decode("utf-8", "replace") for u in uniq.tolist()]
    return pa.DictionaryArray.from_arrays(pa.array(inverse.astype(np.int32)), pa.array(text, pa.string())).cast(pa.string())


def read_hash_dic(path: Path, rel: str, log: IssueLog, device_id: int | None) -> dict[int, str]:
    """``<id>:<string>`` lines (raw-formats §4.4, §5.8); other lines are reported, with their bytes."""
    out: dict[int, str] = {}
    raw = path.read_bytes()
    offset, bad, bad_bytes, first_bad = 0, 0, 0, None
    for line in raw.splitlines(keepends=True):
        key, sep, value = line.rstrip(b"\r\n").partition(b":")
        if sep and key.strip().isdigit():
            out[int(key.strip())] = value.decode("utf-8", "replace")
        elif line.strip():
            bad += 1
            bad_bytes += len(line)
            first_bad = offset if first_bad is None else first_bad
        offset += len(line)
    log.decoded(len(raw) - bad_bytes)
    if bad:
        log.add(Issue(rel, "bad_hash_line", f"{bad} line(s) are not <id>:<name> and were skipped",
                      device_id=device_id, byte_offset=first_bad, byte_length=bad_bytes, count=bad))
    return out


def names_or_hashes(kind: np.ndarray, names: np.ndarray, hashes: np.ndarray, dic: dict[int, str],
                    what: str, rel: str, log: IssueLog, device_id: int) -> pa.Array:
    """A union field: the string where ``kind`` is 1, else the hash resolved through ``dic``.

    An unresolved hash keeps its decimal id as the name and is reported.
    """
    out = np.asarray(decode_names(names).to_numpy(zero_copy_only=False), dtype=object)
    is_hash = kind == 0
    if is_hash.any():
        h = hashes[is_hash]
        uniq, inverse = np.unique(h, return_inverse=True)
        resolved = [dic.get(int(x)) for x in uniq.tolist()]
        missing = sum(1 for r in resolved if r is None)
        if missing:
            log.add(Issue(rel, "unresolved_hash", f"{missing} {what} hash id(s) not in any hash_dic; the id is kept as the name",
                          device_id=device_id, count=missing))
        names_u = np.array([r if r is not None else str(int(x)) for r, x in zip(resolved, uniq.tolist())], dtype=object)
        out[is_hash] = names_u[inverse]
    return pa.array(out, pa.string())
