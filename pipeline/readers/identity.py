"""What identifies a dump, read before any of its data: the texts of its control files and the
collection start they record; for a file, its size and the bytes at its two ends
(docs/architecture.md#change-detection). Each reader's ``identity`` is made of these."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pipeline.paths import relative

EDGE_BYTES = 64 * 1024


def hash_edges(h, p: Path, size: int) -> None:
    """Feed ``h`` a file's first and last 64 KiB (the whole file when it is smaller)."""
    with open(p, "rb") as fh:
        h.update(fh.read(EDGE_BYTES))
        if size > 2 * EDGE_BYTES:
            fh.seek(size - EDGE_BYTES)
            h.update(fh.read(EDGE_BYTES))
        elif size > EDGE_BYTES:
            h.update(fh.read())


def file_key(p: Path) -> str:
    """Hash of one file's size and edges."""
    h = hashlib.sha256()
    size = p.stat().st_size
    h.update(f"{size}\0".encode())
    hash_edges(h, p, size)
    return h.hexdigest()[:16]


def control_texts(root: Path, controls: list[tuple[str, Path]]) -> tuple[int | None, dict[str, str]]:
    """The collection start (from the first readable start_info) and the text of every readable
    control file by its name in the dump; an unreadable control file is left out."""
    # imported here: commands that only build or read the warehouse do not load the metadata
    # models (pydantic)
    from pipeline.readers.metadata import MetadataError, read_start_info, read_text

    texts: dict[str, str] = {}
    start_us = None
    for kind, p in controls:
        try:
            texts[relative(root, p)] = read_text(p)
        except MetadataError:
            continue
        if kind == "start_info" and start_us is None:
            try:
                start_us = read_start_info(p).collection_time_begin_us
            except MetadataError:
                pass
    return start_us, texts
