"""Chrome-trace timelines exported by msprof (``msprof_*.json``, ``timeline/*.json``) and torch_npu (``trace_view.json``)."""

from __future__ import annotations

from pathlib import Path

from pipeline.readers.export.context import ExportContext, SourceResult


def read_timeline(path: Path, kind: str, ctx: ExportContext) -> SourceResult | None:
    raise NotImplementedError  # being written
