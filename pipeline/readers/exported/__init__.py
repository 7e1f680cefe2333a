"""Layout generation 4: what msprof and the torch_npu profiler exported, read when the raw data is gone.

Sources, most detailed first (docs/formats.md#export-files): the unified SQLite
database (``msprof_*.db``, ``ascend_pytorch_profiler*.db``), the event timeline
(``trace_view.json``, ``msprof_*.json``, per-device ``timeline/*.json``), the summary CSVs
(``kernel_details``, ``op_summary``, ``task_time``, ...). ``reader.read_export`` picks, per
canonical table, the most detailed source present and records the choice on the run.

The reader's face (``pipeline/readers/catalog.py``); ``reader`` is imported only where a dump
is read or identified.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.paths import relative
from pipeline.readers.exported.files import LAYOUTS, ExportDump, detect, exports_of_raw, nested_runs
from pipeline.readers.exported.files import scan as _scan
from pipeline.readers.identity import control_texts, file_key


def scan(root: Path, layout: str) -> ExportDump:
    return _scan(root, layout)


def identity(dump: ExportDump) -> tuple[int | None, dict[str, str]]:
    """An export has few control files (a bare folder of CSVs has none), so the names, sizes and
    edges of its exported files stand in for them; the collection start comes from a start_info,
    else the database's session start, else torch_npu's profiler_info."""
    start_us, texts = control_texts(dump.root, [(f.kind, f.path) for f in dump.files if f.group == "control"])
    for f in dump.files:
        if f.group != "control":
            texts[relative(dump.root, f.path)] = f"{f.path.stat().st_size}:{file_key(f.path)}"
    if start_us is None:
        from pipeline.readers.exported.reader import profiler_info_start_us, session_start_us

        start_us = session_start_us(dump)
        if start_us is None:
            start_us = profiler_info_start_us(dump)
    return start_us, texts


def units(dump: ExportDump) -> list:
    """One: an export is read as a whole."""
    return [None]


def read(scanned: ExportDump, sink, log, unit=None, first: bool = True, workdir: Path | None = None):
    from pipeline.readers.exported.reader import read_export

    return read_export(scanned.root, sink, log, scanned.layout, workdir=workdir, scanned=scanned)


def merge_metas(metas: list):
    return metas[0]


__all__ = [
    "LAYOUTS",
    "detect",
    "exports_of_raw",
    "identity",
    "merge_metas",
    "nested_runs",
    "read",
    "scan",
    "units",
]
