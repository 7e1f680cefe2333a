"""Summary CSVs exported by msprof and torch_npu (``kernel_details``, ``op_summary``, ``task_time``)."""

from __future__ import annotations

from pathlib import Path

from pipeline.readers.export.context import ExportContext, SourceResult


def read_summary(path: Path, kind: str, ctx: ExportContext) -> SourceResult | None:
    raise NotImplementedError  # being written
