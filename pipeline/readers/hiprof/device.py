"""Device TLV streams of generation 1 (docs/formats.md#tlv) into canonical columns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.layouts import hiprof as hiprof_layouts
from pipeline.readers.clock import DeviceClock
from pipeline.readers.columns import base_columns
from pipeline.readers.decode import Batch
from pipeline.readers.slices import SliceStream

I64 = np.int64


def ns(clock: DeviceClock | None, syscnt: np.ndarray):
    """Device syscnt as run-clock ns; NULL when the clock (its frequency) is unknown."""
    out = clock.to_ns(syscnt) if clock is not None else None
    return pa.nulls(len(syscnt), pa.int64()) if out is None else out


def time_line_states(
    b: Batch, stream: SliceStream, device_id: int, clock: DeviceClock, record_kind: str = "time_line"
) -> dict:
    """TS TIME_LINE-shaped records (stream, task, type, state, timestamp) as task_states rows."""
    r = b.records
    return {
        **base_columns(b, stream, device_id),
        "record_kind": record_kind,
        "stream_id": (r["stream_id"] % 2048).astype(np.int32),
        "task_id": r["task_id"].astype(np.int32),
        "task_type": r["task_type"].astype(np.int32),
        "task_state": r["task_state"].astype(np.int32),
        "timestamp_syscnt": r["timestamp"].astype(I64),
        "ts_ns": ns(clock, r["timestamp"]),
    }


def memcpy_states(b: Batch, stream: SliceStream, device_id: int, clock: DeviceClock) -> dict:
    """TS memcpy receive / start / end as WAITING / RUNNING / COMPLETE of a memory copy task."""
    r = b.records
    lut = np.full(256, -1, np.int32)
    for k, v in hiprof_layouts.MEMCPY_STATE_TO_TASK_STATE.items():
        lut[k] = v
    state = lut[r["task_state"]]
    state = np.where(state < 0, 1000 + r["task_state"].astype(np.int32), state)  # unknown: kept, 1000+raw
    return {
        **base_columns(b, stream, device_id),
        "record_kind": "ts_memcpy",
        "stream_id": (r["stream_id"] % 2048).astype(np.int32),
        "task_id": r["task_id"].astype(np.int32),
        "task_type": np.full(len(r), hiprof_layouts.MEMCPY_TASK_TYPE, np.int32),
        "task_state": state,
        "timestamp_syscnt": r["timestamp"].astype(I64),
        "ts_ns": ns(clock, r["timestamp"]),
    }


def step_keypoints(b: Batch, stream: SliceStream, device_id: int, clock: DeviceClock) -> dict:
    r = b.records
    return {
        **base_columns(b, stream, device_id),
        "model_id": r["model_id"].astype(I64),
        "index_id": r["index_id"].astype(I64),
        "tag_id": r["tag_id"].astype(np.int32),
        "stream_id": (r["stream_id"] % 2048).astype(np.int32),
        "task_id": r["task_id"].astype(np.int32),
        "timestamp_syscnt": r["timestamp"].astype(I64),
        "ts_ns": ns(clock, r["timestamp"]),
    }


def event_counts(b: Batch, stream: SliceStream, device_id: int, clock: DeviceClock) -> dict:
    r = b.records
    overflow = r["overflow"].astype(np.int32)
    out = {
        **base_columns(b, stream, device_id),
        "record_kind": "event_count",
        "stream_id": (r["stream_id"] % 2048).astype(np.int32),
        "task_id": r["task_id"].astype(np.int32),
        "task_type": r["task_type"].astype(np.int32),
        "block_dim": r["block"].astype(np.int32),
        "total_cycles": r["task_cyc"].astype(np.uint64),
        "overflow": overflow,
        # overflow 0 means overflowCycle is all-F filler (docs/formats.md#event-count)
        "overflow_cycle": np.where(overflow == 0, np.uint64(0), r["overflow_cycle"]).astype(np.uint64),
        "timestamp_syscnt": r["timestamp"].astype(I64),
        "ts_ns": ns(clock, r["timestamp"]),
    }
    for i in range(8):
        out[f"counter_{i}"] = r["events"][:, i].astype(np.uint64)
    return out
