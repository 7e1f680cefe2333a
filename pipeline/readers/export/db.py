"""The unified SQLite database of msprof (``msprof_*.db``) and torch_npu (``ascend_pytorch_profiler*.db``)."""

from __future__ import annotations

from pathlib import Path

from pipeline.readers.export.context import ExportContext, SourceResult


def read_db(path: Path, ctx: ExportContext) -> SourceResult | None:
    raise NotImplementedError  # being written


def session_start_ns(path: Path) -> int | None:
    """SESSION_TIME_INFO.startTimeNs, or None when the file has no readable session table."""
    return None  # being written
