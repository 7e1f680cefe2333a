"""Legacy host records of generation 1 (docs/formats.md#acl-record and after) into canonical columns.

Host timestamps of these structs are already ns on the host monotonic clock (docs/formats.md#clock-host),
so they are used unchanged.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.layouts import hiprof as hiprof_layouts
from pipeline.readers.columns import base_columns
from pipeline.readers.decode import Batch
from pipeline.readers.distinct import map_distinct
from pipeline.readers.issues import Issue, IssueLog
from pipeline.readers.names import decode_names, name_reporter, names_or_hashes
from pipeline.readers.slices import SliceStream

I64 = np.int64


def _report(b: Batch, stream: SliceStream, log: IssueLog, device_id: int, what: str):
    return name_reporter(stream, b.offsets, log, device_id, what)


def acl_calls(b: Batch, stream: SliceStream, device_id: int, acl_hash: dict[int, str], log: IssueLog) -> dict:
    r = b.records
    names = decode_names(r["api_name"], _report(b, stream, log, device_id, "AscendCL API name"))
    if acl_hash:
        # A name may be a hash id into AclModule.hash_dic (docs/formats.md#acl-record).
        # Each distinct name is looked up once.
        enc = names.dictionary_encode()
        resolved = [acl_hash.get(int(n), n) if n.isdigit() else n for n in enc.dictionary.to_pylist()]
        names = pa.DictionaryArray.from_arrays(enc.indices, pa.array(resolved, pa.string()))
    return {
        **base_columns(b, stream, device_id),
        "level": "acl",
        "api_name": names,
        "api_type": r["api_type"].astype(np.int32),
        "pid": r["pid"].astype(I64),
        "tid": r["tid"].astype(I64),
        "start_ns": r["begin"].astype(I64),
        "end_ns": r["end"].astype(I64),
    }


def runtime_calls(b: Batch, stream: SliceStream, device_id: int, log: IssueLog) -> dict:
    r = b.records
    sid = r["stream_id"].astype(I64)
    impossible = (sid > np.iinfo(np.int32).max) & (r["stream_id"] != hiprof_layouts.NO_STREAM)
    if impossible.any():  # a record misread after damage: no stream rather than a wrong one
        n = int(impossible.sum())
        where, at = stream.locate(int(b.offsets[np.argmax(impossible)]))
        log.add(
            Issue(
                where,
                "bad_value",
                f"{n} runtime API record(s) with a stream id above 2^31 (damaged data): stream id NULL",
                device_id=device_id,
                byte_offset=at,
                count=n,
            )
        )
    stream_id = pa.array(
        np.where(impossible, 0, sid), mask=(r["stream_id"] == hiprof_layouts.NO_STREAM) | impossible
    ).cast(pa.int32())
    task_num = np.clip(r["task_num"].astype(I64), 0, 10)
    offsets = np.concatenate(([0], np.cumsum(task_num))).astype(np.int32)
    keep = np.arange(10)[None, :] < task_num[:, None]
    pairs = r["task_pairs"]  # (n, 10, 2): task id, batch id
    task_ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(pairs[:, :, 0][keep].astype(np.int32)))
    batch_ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(pairs[:, :, 1][keep].astype(np.int32)))
    return {
        **base_columns(b, stream, device_id),
        "level": "runtime",
        "api_name": decode_names(r["api_name"], _report(b, stream, log, device_id, "runtime API name")),
        "tid": r["tid"].astype(I64),
        "stream_id": stream_id,
        "start_ns": r["entry"].astype(I64),
        "end_ns": r["exit"].astype(I64),
        "ret_code": r["ret_code"].astype(I64),
        "data_size_bytes": r["data_size"].astype(I64),
        "task_ids": task_ids,
        "batch_ids": batch_ids,
    }


def runtime_track_ops(b: Batch, stream: SliceStream, device_id: int, log: IssueLog) -> dict:
    r = b.records
    return {
        **base_columns(b, stream, device_id),
        "source": "runtime_task_track",
        "stream_id": (r["stream_id"] % 2048).astype(np.int32),
        "task_id": r["task_id"].astype(np.int32),
        "batch_id": r["batch_id"].astype(np.int32),
        "task_type": decode_names(r["task_type"], _report(b, stream, log, device_id, "task type")),
        "ts_ns": r["timestamp"].astype(I64),
    }


GE_TASK_TYPES = np.array(
    [
        "AI_CORE",
        "AI_CPU",
        "AI_VECTOR_CORE",
        "WRITE_BACK",
        "MIX_AIC",
        "MIX_AIV",
        "FFTS_PLUS",
        "DSA_SQE",
        "DVPP",
        "HCCL",
        "INVALID",
    ],
    dtype=object,
)


def ge_task_ops(
    b: Batch, stream: SliceStream, device_id: int, ge_hash: dict[int, str], log: IssueLog
) -> dict:
    r = b.records
    rel = stream.files[0].rel
    task_type = map_distinct(
        r["task_type"], lambda t: GE_TASK_TYPES[t] if t < len(GE_TASK_TYPES) else f"UNKNOWN_{t}"
    )
    blocks = r["block_dims"].astype(I64)
    return {
        **base_columns(b, stream, device_id),
        "source": "ge_task_desc",
        "stream_id": (r["stream_id"] % 2048).astype(np.int32),
        "task_id": r["task_id"].astype(np.int32),
        "batch_id": r["batch_id"].astype(np.int32),
        "model_id": r["model_id"].astype(I64),
        "index_id": r["cur_iter"].astype(I64),
        "op_name": names_or_hashes(
            r["op_name_kind"],
            r["op_name"],
            r["op_name_hash"],
            ge_hash,
            "op name",
            rel,
            log,
            device_id,
            _report(b, stream, log, device_id, "op name"),
        ),
        "op_type": names_or_hashes(
            r["op_type_kind"],
            r["op_type"],
            r["op_type_hash"],
            ge_hash,
            "op type",
            rel,
            log,
            device_id,
            _report(b, stream, log, device_id, "op type"),
        ),
        "task_type": task_type,
        "block_dim": (blocks & 0xFFFF).astype(np.int32),
        "mix_block_dim": ((blocks & 0xFFFF) * (blocks >> 16)).astype(np.int32),
        "context_id": r["context_id"].astype(I64),
        "ts_ns": r["timestamp"].astype(I64),
    }


def model_phases(
    b: Batch, stream: SliceStream, device_id: int, ge_hash: dict[int, str], log: IssueLog, first_infer_id: int
) -> dict:
    """Three rows per model_time record (input, infer, output); infer ids in file order."""
    r = b.records
    n = len(r)
    rel = stream.files[0].rel
    name = names_or_hashes(
        r["model_name_kind"],
        r["model_name"],
        r["model_name_hash"],
        ge_hash,
        "model name",
        rel,
        log,
        device_id,
        _report(b, stream, log, device_id, "model name"),
    )
    infer_id = np.arange(first_infer_id, first_infer_id + n, dtype=np.int32)
    rep = lambda a: np.repeat(a, 3)  # noqa: E731
    rows = pa.array(rep(np.arange(n)))  # each record's row, three times
    phase = np.tile(np.array(["input", "infer", "output"], dtype=object), n)
    start = np.stack([r["input_start"], r["infer_start"], r["output_start"]], axis=1).reshape(-1).astype(I64)
    end = np.stack([r["input_end"], r["infer_end"], r["output_end"]], axis=1).reshape(-1).astype(I64)
    return {
        "device_id": np.full(3 * n, device_id, np.int32),
        "source_file": stream.source_files(b.offsets).take(rows),
        "seq": rep(b.seq),
        "model_id": rep(r["model_id"].astype(I64)),
        "model_name": name.take(rows),
        "request_id": rep(r["request_id"].astype(I64)),
        "tid": rep(r["tid"].astype(I64)),
        "infer_id": rep(infer_id),
        "phase": phase,
        "start_ns": start,
        "end_ns": end,
    }


def model_loads(
    b: Batch, stream: SliceStream, device_id: int, ge_hash: dict[int, str], log: IssueLog
) -> dict:
    r = b.records
    rel = stream.files[0].rel
    return {
        **base_columns(b, stream, device_id),
        "model_id": r["model_id"].astype(I64),
        "model_name": names_or_hashes(
            r["model_name_kind"],
            r["model_name"],
            r["model_name_hash"],
            ge_hash,
            "model name",
            rel,
            log,
            device_id,
        ),
        "phase": "load",
        "start_ns": r["start"].astype(I64),
        "end_ns": r["end"].astype(I64),
    }
