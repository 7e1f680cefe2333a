"""Host data of CANN 7+ (``host/data``): API and event records, compact and additional records.

Records are stored as they are, one canonical row each: API records (and EVENT pairs) in
``api_calls``, compact ``task_track`` and ``node_basic_info`` in ``task_ops``, graph id
maps in ``inferences``. Hash ids go through ``hash_dic`` and type codes through
``type_info_dic`` (docs/formats.md#dictionaries). Which device task gets which op name (the
association rule, docs/formats.md#rule-association) is worked out by the SQL staging layer from these rows.

Host records carry no device id except ``task_track``. A host row is given the device
its thread launched tasks on (``task_track`` deviceId of the same threadId, the most
frequent one), else the only device of its ``PROF_*`` directory, else 64 (host).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from pipeline.layouts import prof as prof_layouts
from pipeline.readers.decode import Batch
from pipeline.readers.distinct import map_distinct, merge_by_mask
from pipeline.readers.issues import Issue, IssueLog
from pipeline.readers.names import read_hash_dic
from pipeline.readers.prof.files import HOST_ID, Stream
from pipeline.readers.prof.meta import HostClock
from pipeline.readers.prof.records import read_fixed
from pipeline.readers.slices import SliceStream
from pipeline.readers.textlines import parse_lines

I64 = np.int64


@dataclass
class HostContext:
    hashes: dict[int, str] = field(default_factory=dict)
    types: dict[tuple[int, int], str] = field(default_factory=dict)
    tid_device: dict[int, int] = field(default_factory=dict)
    fallback_device: int = HOST_ID
    pid: int | None = None
    clock: HostClock = field(default_factory=lambda: HostClock(None, 0, 0))
    unresolved: Counter = field(default_factory=Counter)  # (file, what) -> ids not in a dictionary

    def device_of(self, tid: np.ndarray) -> np.ndarray:
        if not self.tid_device:
            return np.full(len(tid), self.fallback_device, np.int32)
        return map_distinct(
            tid, lambda t: self.tid_device.get(t, self.fallback_device), pa.int32()
        ).to_numpy()

    def names(self, ids: np.ndarray, rel: str, what: str) -> pa.Array:
        """Hash ids through hash_dic; an id without an entry keeps its decimal text; 0 is no name."""

        def name(x: int) -> str | None:
            found = self.hashes.get(x)
            if found is None and x != 0:
                self.unresolved[(rel, what)] += 1
                return str(x)
            return found

        return map_distinct(ids, name)

    def type_names(self, level: np.ndarray, typ: np.ndarray, rel: str) -> pa.Array:
        def name(key: int) -> str:
            lv, ty = key >> 32, key & 0xFFFFFFFF
            found = self.types.get((lv, ty))
            if found is None:
                self.unresolved[(rel, "type")] += 1
                return f"{lv}_{ty}"
            return found

        return map_distinct(level.astype(np.int64) * (1 << 32) + typ.astype(np.int64), name)

    def flush(self, log: IssueLog) -> None:
        for (rel, what), n in sorted(self.unresolved.items()):
            if what == "type":
                msg = f"{n} type code(s) not in any type_info_dic; kept as <level>_<type>"
            else:
                msg = f"{n} {what} hash id(s) not in any hash_dic; the id is kept as the name"
            log.add(Issue(rel, "unresolved_hash", msg, device_id=HOST_ID, count=n))
        self.unresolved.clear()


def read_type_info(stream: Stream, log: IssueLog) -> dict[tuple[int, int], str]:
    """``<level>_<type>:<name>`` lines (docs/formats.md#dictionaries); other lines are reported."""

    def entry(line: bytes):
        key, sep, value = line.partition(b":")
        lv, us, ty = key.strip().partition(b"_")
        if sep and us and lv.isdigit() and ty.isdigit():
            return (int(lv), int(ty)), value.decode("utf-8", "replace")
        return None

    out: dict[tuple[int, int], str] = {}
    for f in stream.files:
        out.update(
            v
            for _, v in parse_lines(
                f.path.read_bytes(), entry, log, f.rel, HOST_ID, "bad_hash_line", "<level>_<type>:<name>"
            )
        )
    return out


def read_hashes(stream: Stream, log: IssueLog) -> dict[int, str]:
    out: dict[int, str] = {}
    for f in stream.files:
        out.update(read_hash_dic(f.path, f.rel, log, HOST_ID))
    return out


def _files(stream: SliceStream, b: Batch) -> pa.Array:
    return stream.source_files(b.offsets)


def thread_devices(streams: list[Stream], log: IssueLog) -> dict[int, int]:
    """threadId -> the device its task_track records launched on most often."""
    counts: dict[int, Counter] = {}
    for s in streams:
        _, batches = read_fixed(
            s.files, prof_layouts.TASK_TRACK, IssueLog(), HOST_ID, aged=s.family == "aging", host_magic=True
        )  # a first pass: issues and bytes are counted by the second
        for b in batches:
            r = b.records
            pairs = pa.array(
                (r["tid"].astype(I64) << 12) | (r["device_id"] & 0xFFF).astype(I64)
            ).value_counts()
            for key, k in zip(pairs.field("values").to_pylist(), pairs.field("counts").to_pylist()):
                counts.setdefault(key >> 12, Counter())[key & 0xFFF] += k
    return {tid: c.most_common(1)[0][0] for tid, c in counts.items()}


def task_track_rows(s: Stream, ctx: HostContext, log: IssueLog):
    stream, batches = read_fixed(
        s.files, prof_layouts.TASK_TRACK, log, HOST_ID, aged=s.family == "aging", host_magic=True
    )
    for b in batches:
        r = b.records
        rel = s.name
        yield {
            "device_id": (r["device_id"] & 0xFFF).astype(np.int32),
            "source_file": _files(stream, b),
            "seq": b.seq,
            "source": "task_track",
            "stream_id": r["stream_id"].astype(np.int32),
            "task_id": r["task_id"].astype(np.int32),
            "batch_id": r["batch_id"].astype(np.int32),
            "op_name": ctx.names(r["kernel_name"], rel, "kernel name"),
            "task_type": ctx.type_names(np.full(len(r), prof_layouts.RUNTIME_LEVEL), r["task_type"], rel),
            "task_type_code": r["task_type"].astype(I64),
            "tid": r["tid"].astype(I64),
            "ts_ns": ctx.clock.to_ns(r["timestamp"]),
        }


def node_basic_info_rows(s: Stream, ctx: HostContext, log: IssueLog):
    stream, batches = read_fixed(
        s.files, prof_layouts.NODE_BASIC_INFO, log, HOST_ID, aged=s.family == "aging", host_magic=True
    )
    ge = np.array(prof_layouts.GE_TASK_TYPES, dtype=object)
    for b in batches:
        r = b.records
        rel = s.name
        tt = r["task_type"].astype(I64)
        names = map_distinct(tt, lambda t: ge[t] if 0 <= t < len(ge) else f"UNKNOWN_{t}")
        blocks = r["block_num"].astype(I64)
        yield {
            "device_id": ctx.device_of(r["tid"]),
            "source_file": _files(stream, b),
            "seq": b.seq,
            "source": "node_basic_info",
            "op_name": ctx.names(r["op_name"], rel, "op name"),
            "op_type": ctx.names(r["op_type"], rel, "op type"),
            "task_type": names,
            "task_type_code": tt,
            "block_dim": (blocks & 0xFFFF).astype(np.int32),
            "mix_block_dim": ((blocks & 0xFFFF) * (blocks >> 16)).astype(np.int32),
            "op_state": "dynamic" if s.family == "aging" else "static",
            "tid": r["tid"].astype(I64),
            "ts_ns": ctx.clock.to_ns(r["timestamp"]),
        }


def _api_columns(
    stream: SliceStream,
    ctx: HostContext,
    rel: str,
    r: np.ndarray,
    offsets: np.ndarray,
    seq: np.ndarray,
    begin: np.ndarray,
    end: np.ndarray,
    kind: str,
) -> dict:
    level = r["level"].astype(I64)
    typ = r["type"].astype(I64)
    is_acl = level == prof_layouts.ACL_LEVEL
    is_model = level == prof_layouts.MODEL_LEVEL
    # MODEL level: itemId is the model id (docs/formats.md#api-event); elsewhere a hash id
    item = merge_by_mask(
        is_model, map_distinct(r["item_id"][is_model], str), ctx.names(r["item_id"][~is_model], rel, "item")
    )
    level_names = map_distinct(level, lambda lv: prof_layouts.LEVELS.get(lv, str(lv)))
    return {
        "device_id": ctx.device_of(r["tid"]),
        "source_file": stream.source_files(offsets),
        "seq": seq,
        "level": level_names,
        "api_name": ctx.type_names(level, typ, rel),
        "api_type": pa.array((typ >> 16).astype(np.int32), mask=~is_acl),
        "pid": pa.nulls(len(r), pa.int64()) if ctx.pid is None else np.full(len(r), ctx.pid, I64),
        "tid": r["tid"].astype(I64),
        "start_ns": ctx.clock.to_ns(begin),
        "end_ns": ctx.clock.to_ns(end),
        "type_code": typ,
        "item": item,
        "record_kind": kind,
    }


def api_event_rows(s: Stream, ctx: HostContext, log: IssueLog):
    """API records as calls; EVENT records paired into calls (formats.md#api-event) as they come: per key, the
    1st and 2nd records are one call, the 3rd and 4th the next, ...; a key's odd record waits
    for the next batch, and one still waiting at the end of the stream is reported."""
    stream, batches = read_fixed(
        s.files, prof_layouts.API_EVENT, log, HOST_ID, aged=s.family == "aging", host_magic=True
    )
    rel = s.name
    invalid = 0
    waiting = None  # (records, offsets, seq) of EVENT records whose pair has not come yet
    for b in batches:
        r = b.records
        is_event = r["end"] == np.uint64(prof_layouts.EVENT_FLAG)
        api = ~is_event & (r["begin"] != 0)
        invalid += int((~is_event & (r["begin"] == 0)).sum())
        if api.any():
            ra = r[api]
            yield _api_columns(
                stream, ctx, rel, ra, b.offsets[api], b.seq[api], ra["begin"], ra["end"], "api"
            )
        if is_event.any():
            events = (r[is_event], b.offsets[is_event], b.seq[is_event])
            if waiting is not None:
                events = tuple(np.concatenate([w, e]) for w, e in zip(waiting, events))
            pairs, waiting = _pair_events(*events)
            if pairs is not None:
                rec, offs, seq, end = pairs
                yield _api_columns(stream, ctx, rel, rec, offs, seq, rec["begin"], end, "event_pair")
    if invalid:
        log.add(
            Issue(
                rel,
                "invalid_api",
                f"{invalid} API record(s) with beginTime 0 skipped (as msprof does)",
                device_id=HOST_ID,
                count=invalid,
            )
        )
    lonely = 0 if waiting is None else len(waiting[0])
    if lonely:
        log.add(
            Issue(
                rel,
                "unmatched_event",
                f"{lonely} EVENT record(s) without a second record of the same key",
                device_id=HOST_ID,
                count=lonely,
            )
        )


def _pair_events(rec: np.ndarray, offs: np.ndarray, seq: np.ndarray):
    """Pairs of EVENT records of one key in record order: ((first records, offsets, seq, end
    times) or None, the records left waiting (the odd last one of a key))."""
    order = np.lexsort((seq, rec["item_id"], rec["request_id"], rec["tid"], rec["type"], rec["level"]))
    rec, offs, seq = rec[order], offs[order], seq[order]
    key = np.stack(
        [
            rec["level"].astype(np.uint64),
            rec["type"].astype(np.uint64),
            rec["tid"].astype(np.uint64),
            rec["request_id"].astype(np.uint64),
            rec["item_id"],
        ],
        axis=1,
    )
    new = np.ones(len(rec), bool)
    new[1:] = (key[1:] != key[:-1]).any(axis=1)
    group_start = np.maximum.accumulate(np.where(new, np.arange(len(rec)), 0))
    rank = np.arange(len(rec)) - group_start
    starts = np.flatnonzero(rank % 2 == 0)
    has_end = np.zeros(len(starts), bool)
    nxt = starts + 1
    ok = nxt < len(rec)
    has_end[ok] = ~new[nxt[ok]]
    left = starts[~has_end]
    waiting = (rec[left], offs[left], seq[left]) if len(left) else None
    st = starts[has_end]
    pairs = (rec[st], offs[st], seq[st], rec[st + 1]["begin"]) if len(st) else None
    return pairs, waiting


def graph_id_rows(s: Stream, ctx: HostContext, log: IssueLog):
    stream, batches = read_fixed(
        s.files, prof_layouts.GRAPH_ID_MAP, log, HOST_ID, aged=s.family == "aging", host_magic=True
    )
    for b in batches:
        r = b.records
        ts = ctx.clock.to_ns(r["timestamp"])
        yield {
            "device_id": ctx.device_of(r["tid"]),
            "source_file": _files(stream, b),
            "seq": b.seq,
            "model_id": r["model_id"].astype(I64),
            "model_name": ctx.names(r["model_name"], s.name, "model name"),
            "tid": r["tid"].astype(I64),
            "graph_id": r["graph_id"].astype(I64),
            "phase": "graph_id_map",
            "start_ns": ts,
            "end_ns": ts,
        }
