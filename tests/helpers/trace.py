"""A run's Chrome trace as the ``timeline`` command writes it, read back as a dict."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from pipeline.outputs.trace import write_trace


def chrome_trace(wh, run_ref: str = "latest", **options) -> dict:
    """``write_trace`` into a temporary file, parsed (options as ``write_trace`` takes them)."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "trace.json"
        write_trace(wh, str(out), run_ref, **options)
        return json.loads(out.read_text())
