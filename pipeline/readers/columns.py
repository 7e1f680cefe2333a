"""Columns every canonical row carries, built once for a decoded batch."""

from __future__ import annotations

import numpy as np

from pipeline.readers.decode import Batch
from pipeline.readers.slices import SliceStream


def base_columns(b: Batch, stream: SliceStream, device_id: int) -> dict:
    """device_id, source_file (the slice holding each record's first byte) and seq."""
    return {
        "device_id": np.full(len(b.records), device_id, np.int32),
        "source_file": stream.source_files(b.offsets),
        "seq": b.seq,
    }
