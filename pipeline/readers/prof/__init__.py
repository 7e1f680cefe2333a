"""Layout generations 2 and 3: msprof ``PROF_*`` trees (HWTS and STARS chips, CANN 7+ host data).

The reader's face (``pipeline/readers/catalog.py``); ``reader`` is imported only where a dump
is read or split into units.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.readers.identity import control_texts
from pipeline.readers.prof.files import ProfDump, control_files, detect
from pipeline.readers.prof.files import scan as _scan

LAYOUTS = ("msprof_prof", "msprof_job", "profiler_default_tag", "msprof_result_dir")


def scan(root: Path, layout: str) -> ProfDump:
    return _scan(root, layout)


def identity(dump: ProfDump) -> tuple[int | None, dict[str, str]]:
    return control_texts(dump.root, control_files(dump))


def units(dump: ProfDump) -> list[str]:
    """Its collection directories (each ``host`` and each ``device_N``), by their path in the dump."""
    return [cd.rel for cd in dump.collections]


def read(scanned: ProfDump, sink, log, unit=None, first: bool = True, workdir: Path | None = None):
    """The whole dump (``unit`` None) or one collection directory of it."""
    from pipeline.readers.prof.reader import read_prof

    return read_prof(
        scanned.root, sink, log, scanned.layout, collections=None if unit is None else [unit], scanned=scanned
    )


def merge_metas(metas: list):
    from pipeline.readers.prof.reader import merge_metas

    return merge_metas(metas)


__all__ = ["LAYOUTS", "control_files", "detect", "identity", "merge_metas", "read", "scan", "units"]
