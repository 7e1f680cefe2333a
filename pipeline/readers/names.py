"""Fixed-width name fields to Arrow strings, decoding each distinct value once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.readers.distinct import distinct, map_distinct, merge_by_mask
from pipeline.readers.issues import Issue, IssueLog
from pipeline.readers.textlines import parse_lines


def decode_names(raw: np.ndarray, on_bad=None) -> pa.Array:
    """``S<n>`` values, cut at the first NUL, as strings; each distinct value decoded once.

    Bytes that are not UTF-8 become ``\\x`` escapes, and ``on_bad`` (if given) receives a
    boolean mask of the records that held such bytes, so they can be reported.
    """
    if len(raw) == 0:
        return pa.array([], pa.string())
    uniq, index = distinct(raw)
    text, bad = [], []
    for u in uniq:
        value = u.split(b"\0", 1)[0]
        try:
            text.append(value.decode("utf-8"))
            bad.append(False)
        except UnicodeDecodeError:
            text.append(value.decode("utf-8", "backslashreplace"))
            bad.append(True)
    if on_bad is not None and any(bad):
        on_bad(np.asarray(bad)[index])
    return pa.array(text, pa.string()).take(pa.array(index))


def name_reporter(stream, offsets: np.ndarray, log: IssueLog, device_id: int | None, what: str):
    """An ``on_bad`` callback for ``decode_names``: one issue per file, at its first such record."""

    def report(bad: np.ndarray) -> None:
        offs = offsets[bad]
        files = stream.file_index(offs)
        for i in np.unique(files).tolist():
            mine = offs[files == i]
            log.add(
                Issue(
                    stream.files[i].rel,
                    "bad_name_encoding",
                    f"{len(mine)} {what} field(s) are not UTF-8; kept with \\x escapes",
                    device_id=device_id,
                    byte_offset=int(mine[0] - stream.starts[i]),
                    count=len(mine),
                )
            )

    return report


def read_hash_dic(path: Path, rel: str, log: IssueLog, device_id: int | None) -> dict[int, str]:
    """``<id>:<string>`` lines (docs/formats.md#dictionaries); other lines are reported, with their bytes."""

    def entry(line: bytes):
        key, sep, value = line.partition(b":")
        return (int(key.strip()), value.decode("utf-8", "replace")) if sep and key.strip().isdigit() else None

    return dict(
        v
        for _, v in parse_lines(path.read_bytes(), entry, log, rel, device_id, "bad_hash_line", "<id>:<name>")
    )


def names_or_hashes(
    kind: np.ndarray,
    names: np.ndarray,
    hashes: np.ndarray,
    dic: dict[int, str],
    what: str,
    rel: str,
    log: IssueLog,
    device_id: int,
    on_bad=None,
) -> pa.Array:
    """A union field: the string where ``kind`` is 1, else the hash resolved through ``dic``.

    An unresolved hash keeps its decimal id as the name and is reported.
    """
    strings = kind != 0
    report = None if on_bad is None else (lambda bad: on_bad(_expand(bad, strings)))
    missing = 0

    def resolve(x: int) -> str:
        nonlocal missing
        found = dic.get(x)
        if found is None:
            missing += 1
            return str(x)
        return found

    out = merge_by_mask(
        strings, decode_names(names[strings], report), map_distinct(hashes[~strings], resolve)
    )
    if missing:
        log.add(
            Issue(
                rel,
                "unresolved_hash",
                f"{missing} {what} hash id(s) not in any hash_dic; the id is kept as the name",
                device_id=device_id,
                count=missing,
            )
        )
    return out


def _expand(mask: np.ndarray, where: np.ndarray) -> np.ndarray:
    full = np.zeros(len(where), bool)
    full[where] = mask
    return full
