"""A stream of slice files read as one byte sequence, in bounded chunks.

Producers cut a record stream into ``*.slice_N`` files at arbitrary byte positions,
so a record may start in one slice and end in the next (docs/formats.md#slices). A
``SliceStream`` yields the bytes of every slice in order, chunk by chunk, and maps
any stream offset back to (file, offset in file) for records and issues.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.readers.issues import Issue

CHUNK_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class SliceFile:
    path: Path
    rel: str  # path relative to the run root, as stored in source_file
    size: int


class SliceStream:
    """The slices of one stream; ``skip`` leading bytes are not read (an aged head, formats.md#aging),
    while every offset stays an offset into the whole stream.

    A slice is read up to the size it had when the dump was scanned (``SliceFile.size``), never
    further: a producer still writing cannot make an ingest read more than it measured, or run
    forever (docs/formats.md#live-dumps). With ``log``, the bytes written since are reported
    (``grown_while_read``) and so is a slice shorter than its ``.done`` marker says
    (``missing_data``)."""

    def __init__(
        self,
        files: list[SliceFile],
        chunk_bytes: int = CHUNK_BYTES,
        skip: int = 0,
        log=None,
        device_id: int | None = None,
    ):
        self.files = files
        self.chunk_bytes = chunk_bytes
        self.skip = skip
        self.log = log
        self.device_id = device_id
        sizes = np.array([f.size for f in files], dtype=np.int64)
        self.starts = np.concatenate(([0], np.cumsum(sizes)))[:-1] if files else np.zeros(0, np.int64)
        self.total = int(sizes.sum()) if files else 0
        if log is not None:
            for f in files:
                declared = done_size(f.path)
                if declared is not None and declared > f.size:
                    log.add(
                        Issue(
                            f.rel,
                            "missing_data",
                            f"holds {f.size} bytes where its .done marker says "
                            f"{declared}: {declared - f.size} bytes are missing",
                            device_id=device_id,
                            byte_offset=f.size,
                            byte_length=declared - f.size,
                        )
                    )

    def chunks(self, align: int = 1) -> Iterator[tuple[int, bytes]]:
        """(stream offset, bytes) for every chunk of every slice, in order. With ``align`` (a
        record size), a chunk ends on a record boundary of the stream (records start at
        ``skip``), except where its slice ends: the decoder then has no record tail to join
        to the next chunk, which costs a copy of the whole chunk (a 40-byte record stream
        read 16 MiB at a time would have one at every chunk)."""
        for f, start in zip(self.files, self.starts.tolist()):
            if start + f.size <= self.skip:
                continue
            with open(f.path, "rb") as fh:
                first = max(0, self.skip - start)
                fh.seek(first)
                pos = start + first
                end = start + f.size  # the size measured at the scan: bytes written since wait
                while pos < end:
                    n = self.chunk_bytes + (-(pos + self.chunk_bytes - self.skip)) % align
                    data = fh.read(min(n, end - pos))
                    if not data:
                        break
                    yield pos, data
                    pos += len(data)
                grown = os.fstat(fh.fileno()).st_size - f.size
                if grown > 0 and self.log is not None:
                    self.log.add(
                        Issue(
                            f.rel,
                            "grown_while_read",
                            f"{grown} bytes were written to it after the ingest "
                            "measured it; not read (the dump counts as changed, the next run reads them)",
                            device_id=self.device_id,
                            byte_offset=f.size,
                            byte_length=grown,
                        )
                    )

    def file_index(self, offsets: np.ndarray) -> np.ndarray:
        """Index into ``files`` of the slice holding each stream offset."""
        return np.searchsorted(self.starts, offsets, side="right") - 1

    def locate(self, offset: int) -> tuple[str, int]:
        i = int(self.file_index(np.array([offset]))[0])
        return self.files[i].rel, offset - int(self.starts[i])

    def spans(self, offset: int, length: int) -> list[tuple[str, int, int]]:
        """A stream byte range split into (file, offset in file, length) pieces."""
        out = []
        end = offset + length
        while offset < end:
            i = int(self.file_index(np.array([offset]))[0])
            f_end = int(self.starts[i]) + self.files[i].size
            piece = min(end, f_end) - offset
            out.append((self.files[i].rel, offset - int(self.starts[i]), piece))
            offset += piece
        return out

    def source_files(self, offsets: np.ndarray) -> pa.DictionaryArray:
        """``source_file`` of records starting at the given stream offsets (vectorised), as
        indices into the stream's file names: written to Parquet as they are (pipeline.warehouse.sink),
        with no string per record."""
        names = pa.array([f.rel for f in self.files], pa.string())
        idx = pa.array(self.file_index(offsets).astype(np.int32))
        return pa.DictionaryArray.from_arrays(idx, names)


_DONE = re.compile(rb"filesize\s*[:=]\s*(\d{1,18})")


def done_size(path: Path) -> int | None:
    """The byte count a slice's ``<slice>.done`` marker declares (``filesize:N``), if it has one."""
    try:
        with open(path.with_name(path.name + ".done"), "rb") as fh:
            m = _DONE.search(fh.read(256))
    except OSError:
        return None
    return int(m.group(1)) if m else None


# Streams the collector never ages (docs/formats.md#aging): a slice of theirs that is gone is lost
NEVER_AGED = re.compile(r"unaging|ts_track|task_desc_info|model_load_info|hash_dic|training_trace")


def gone_slices(
    data: Path, names: list[str], is_slice: Callable[[str], tuple | None]
) -> list[tuple[str, int | None, tuple]]:
    """Slices of folder ``data`` (whose entries' ``names`` the scanner listed) that the collector
    wrote and that are not there: a ``<slice>.done`` marker (docs/formats.md#markers) whose slice
    file is gone (deleted or moved after the collection). ``is_slice(name)``: what the scanner
    matches in a data file's name (stream and slice number), or None. Each as (the slice's name,
    the bytes its marker declares, that match), by name."""
    present = set(names)
    out = []
    for marker in sorted(present):
        name = marker.removesuffix(".done")
        if name == marker or name in present:
            continue
        hit = is_slice(name)
        if hit:
            out.append((name, done_size(data / name), hit))
    return out


def gone_issue(rel: str, declared: int | None, device_id: int | None = None) -> Issue:
    """The ingest issue of a slice ``gone_slices`` found missing: its data is lost."""
    size = "" if declared is None else f" of {declared} bytes"
    return Issue(
        rel,
        "missing_file",
        f"the collector wrote this slice{size}, as its .done marker says, and it is gone: its records are lost",
        device_id=device_id,
        byte_length=declared,
    )


class Carry:
    """Joins the unread tail of one chunk with the next chunk."""

    def __init__(self) -> None:
        self.tail = b""
        self.tail_offset = 0

    def join(self, offset: int, data: bytes) -> tuple[int, np.ndarray]:
        if self.tail:
            buf = self.tail + data
            start = self.tail_offset
        else:
            buf, start = data, offset
        return start, np.frombuffer(buf, dtype=np.uint8)

    def keep(self, start: int, buf: np.ndarray, consumed: int) -> None:
        self.tail = buf[consumed:].tobytes()
        self.tail_offset = start + consumed
