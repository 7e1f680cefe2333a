"""Layout generation 1: the hiprof-era single-directory ``result_dir`` (Ascend310, chip 0).

The reader's face (``pipeline/readers/catalog.py``); ``reader`` is imported only where a dump
is read or split into units.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.readers.hiprof.files import Layout1Files, is_result_dir
from pipeline.readers.hiprof.files import scan as _scan
from pipeline.readers.identity import control_texts

LAYOUTS = ("hiprof_result_dir",)


def detect(path: Path) -> str | None:
    return LAYOUTS[0] if is_result_dir(path) else None


def scan(root: Path, layout: str) -> Layout1Files:
    return _scan(root)


def identity(files: Layout1Files) -> tuple[int | None, dict[str, str]]:
    controls = [
        (kind, p)
        for kind, by_dev in files.control.items()
        for _, p in sorted(by_dev.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0))
    ]
    return control_texts(files.root, controls)


def units(files: Layout1Files) -> list[int]:
    """Its devices, each read on its own with every stream that names it, host-side streams included."""
    from pipeline.readers.hiprof.reader import device_ids

    return device_ids(files)


def read(scanned: Layout1Files, sink, log, unit=None, first: bool = True, workdir: Path | None = None):
    """The whole dump (``unit`` None) or one device of it; ``first``: this unit also reports the
    files that belong to no device."""
    from pipeline.readers.hiprof.reader import read_result_dir

    return read_result_dir(
        scanned.root, sink, log, devices=None if unit is None else [unit], dump_level=first, files=scanned
    )


def merge_metas(metas: list):
    from pipeline.readers.hiprof.reader import merge_metas

    return merge_metas(metas)


__all__ = ["LAYOUTS", "detect", "identity", "is_result_dir", "merge_metas", "read", "scan", "units"]
