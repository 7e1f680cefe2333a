"""The warehouse's path scheme, shared by the index, the commit records and the check: the
layers and their index columns, and which part a file's name belongs to."""

from __future__ import annotations

import os
from pathlib import Path

# (layer folder, the index column naming a run's part of it, the run's id of that part)
LAYERS = (("raw", "raw_part", "ingest_id"), ("marts", "mart_part", "build_id"))


def part_of(file_name: str) -> str | None:
    """The part a flat part file belongs to (``part-<part>.parquet``, or shard
    ``part-<part>.<k>.parquet`` of a sharded part), or None for another name."""
    if not (file_name.startswith("part-") and file_name.endswith(".parquet")):
        return None
    return file_name[len("part-") : -len(".parquet")].split(".", 1)[0]


def entry_part(rel: str) -> tuple[str, str]:
    """(layer, part) of a ``files`` entry's path (``<layer>/<table>/part-<part>[.<k>].parquet``)."""
    layer, _, name = rel.split("/", 2)
    return layer, part_of(name.rsplit("/", 1)[-1])


def fsync_dir(path: Path) -> None:
    """fsync a folder: what was renamed into it stays after a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
