"""Device data of generations 2 and 3 (``device_N/data``) into canonical columns.

* ``ts_track`` (40-byte records, tag in byte 1, formats.md#ts-track): step trace -> ``step_trace``; TS
  memcpy receive/start/end and task-type records -> ``task_states``; task flips ->
  ``task_states`` (record_kind ``task_flip``) and the batch ids; block nums -> ``task_ops``.
* ``hwts.data`` (formats.md#hwts-log) and STARS ``stars_soc.data`` (formats.md#stars-acsq): start/end logs paired into
  ``task_runs``.
* ``aicore.data`` (formats.md#aic-pmu, task-based: one record per AI Core task end; formats.md#aic-sample sample-based:
  one record per interval and core) and ``ffts_profile.data`` (formats.md#stars-acsq) -> ``pmu_counters``.
* ``lpmFreqConv.data`` (formats.md#lpm-freq) -> ``freq_samples``.
* MindSpore 0.5 ``training_trace`` (20-byte keypoints) -> ``step_trace``, tags translated.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from pipeline.layouts import Layout
from pipeline.layouts import prof as prof_layouts
from pipeline.readers.clock import DeviceClock
from pipeline.readers.columns import base_columns
from pipeline.readers.decode import Batch
from pipeline.readers.distinct import map_distinct
from pipeline.readers.hiprof import device as hiprof_device
from pipeline.readers.hiprof.device import ns
from pipeline.readers.issues import Issue, IssueLog
from pipeline.readers.prof.files import Stream
from pipeline.readers.prof.pairing import Logs, Runs
from pipeline.readers.prof.records import Tally, read_fixed
from pipeline.readers.slices import SliceStream
from pipeline.readers.textlines import parse_lines

I64 = np.int64
# a 40-byte record as raw bytes, with its tag: the tag's own layout is applied per tag
TS_GENERIC = Layout(
    "ts_track",
    np.dtype(
        {
            "names": ["raw", "tag"],
            "formats": ["V40", "u1"],
            "offsets": [0, 1],
            "itemsize": prof_layouts.TS_TRACK_SIZE,
        }
    ),
)


def _as(records: np.ndarray, layout: Layout) -> np.ndarray:
    """The 40-byte records read with one tag's layout (a view: no copy)."""
    return records.view(layout.dtype)


def read_ts_track(s: Stream, dev: int, clock: DeviceClock, sink, log: IssueLog) -> dict:
    """Writes step trace, task states, flips and block nums; returns the flips as arrays."""
    stream, batches = read_fixed(s.files, TS_GENERIC, log, dev, aged=False)
    tally = Tally()
    flips = {"stream_id": [], "ts": [], "task_id": [], "flip_num": []}
    for b in batches:
        tag = b.records["tag"]
        for t, layout in prof_layouts.TS_LAYOUTS.items():
            m = tag == t
            if not m.any():
                continue
            tagged = b.where(m)
            sub = Batch(_as(tagged.records, layout), tagged.offsets, tagged.seq)
            r = sub.records
            if t == prof_layouts.TS_STEP_TRACE.tag:
                sink.write(
                    "step_trace",
                    {
                        **hiprof_device.step_keypoints(sub, stream, dev, clock),
                        "raw_tag_id": r["tag_id"].astype(I64),
                    },
                )
            elif t == prof_layouts.TS_MEMCPY.tag:
                sink.write("task_states", hiprof_device.memcpy_states(sub, stream, dev, clock))
            elif t == prof_layouts.TS_TASK_TYPE.tag:
                sink.write(
                    "task_states", hiprof_device.time_line_states(sub, stream, dev, clock, "ts_task_type")
                )
            elif t == prof_layouts.TS_FLIP.tag:
                sink.write(
                    "task_states",
                    {
                        **base_columns(sub, stream, dev),
                        "record_kind": "task_flip",
                        "stream_id": r["stream_id"].astype(np.int32),  # not masked (docs/formats.md#ts-track)
                        "task_id": r["task_id"].astype(np.int32),
                        "flip_num": r["flip_num"].astype(np.int32),
                        "timestamp_syscnt": r["timestamp"].astype(I64),
                        "ts_ns": ns(clock, r["timestamp"]),
                    },
                )
                flips["stream_id"].append(r["stream_id"].astype(I64))
                flips["ts"].append(r["timestamp"].astype(I64))
                flips["task_id"].append(r["task_id"].astype(I64))
                flips["flip_num"].append(r["flip_num"].astype(I64))
            elif t == prof_layouts.TS_BLOCK_NUM.tag:
                sink.write(
                    "task_ops",
                    {
                        **base_columns(sub, stream, dev),
                        "source": "ts_block_num",
                        "stream_id": (r["stream_id"] % 2048).astype(np.int32),
                        "task_id": r["task_id"].astype(np.int32),
                        "block_dim": r["block_num"].astype(np.int32),
                        "ts_ns": ns(clock, r["timestamp"]),
                    },
                )
        other = ~np.isin(tag, list(prof_layouts.TS_LAYOUTS))
        if other.any():
            for t in np.unique(tag[other]).tolist():
                what = prof_layouts.TS_IGNORED_TAGS.get(t, f"unknown ts_track tag {t}")
                tally.add(stream, b.offsets[other & (tag == t)], prof_layouts.TS_TRACK_SIZE, what)
    tally.flush(log, dev)
    return {k: np.concatenate(v) if v else np.zeros(0, I64) for k, v in flips.items()}


# Start/end logs are paired a chunk at a time (pairing.Pairer carries each key's open start
# into the next chunk), so memory stays flat however long the stream is.
CHUNK_LOGS = 1_000_000


def _read_start_end(
    s: Stream, dev: int, log: IssueLog, layout, kind_of, start: int, end: int, label, ids, task_type
) -> tuple[SliceStream, Iterator[list[Logs]]]:
    """Start and end logs of one device's task log stream, in chunks of about ``CHUNK_LOGS``
    logs (whole decoded batches, one Logs each: Pairer.feed joins them once, with its carry);
    records of other kinds are counted."""
    stream, batches = read_fixed(s.files, layout, log, dev, aged=True, device_magic=prof_layouts.DEVICE_MAGIC)

    def chunks() -> Iterator[list[Logs]]:
        tally = Tally()
        parts: list[Logs] = []
        held = 0
        for b in batches:
            r = b.records
            kind = kind_of(r)
            keep = (kind == start) | (kind == end)
            for k in np.unique(kind[~keep]).tolist():
                tally.add(stream, b.offsets[kind == k], layout.size, label(k))
            kept = b.where(keep)
            r = kept.records
            st, tk = ids(r)
            parts.append(
                Logs(st, tk, kind[keep] == end, r["syscnt"].astype(I64), kept.seq, kept.offsets, task_type(r))
            )
            held += len(r)
            if held >= CHUNK_LOGS:
                yield parts
                parts, held = [], 0
        if parts:
            yield parts
        tally.flush(log, dev)

    return stream, chunks()


def read_hwts(s: Stream, dev: int, log: IssueLog) -> tuple[SliceStream, Iterator[list[Logs]]]:
    """HWTS task start (log type 0) and end (1) logs; other log types are counted."""
    return _read_start_end(
        s,
        dev,
        log,
        prof_layouts.HWTS_LOG,
        lambda r: r["head"] & 7,
        prof_layouts.HWTS_START,
        prof_layouts.HWTS_END,
        lambda k: f"HWTS log type {k}",
        lambda r: ((r["stream_id"] % 2048).astype(I64), r["task_id"].astype(I64)),
        lambda r: r["task_type"].astype(np.int32),
    )


def stars_ids(stream_raw: np.ndarray, task_raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """STARS (non-V6, no stream expansion) stream and task ids from their raw fields (formats.md#stars-ids)."""
    s = stream_raw.astype(I64)
    t = task_raw.astype(I64)
    b12 = (s & 0x1000) != 0
    b13 = ~b12 & ((s & 0x2000) != 0)
    stream = np.where(b13, (t & 0x0FFF) % 2048, s % 2048)
    task = np.where(b12, (t & 0x1FFF) | (s & 0xE000), np.where(b13, (s & 0x0FFF) | (t & 0xF000), t))
    return stream, task


def read_stars(s: Stream, dev: int, log: IssueLog) -> tuple[SliceStream, Iterator[list[Logs]]]:
    """ACSQ task start (func type 0) and end (1) logs of ``stars_soc``; other func types are counted."""
    return _read_start_end(
        s,
        dev,
        log,
        prof_layouts.STARS_ACSQ,
        lambda r: r["head"] & 0x3F,
        prof_layouts.ACSQ_START,
        prof_layouts.ACSQ_END,
        lambda k: f"stars_soc func type {k:06b}",
        lambda r: stars_ids(r["stream_id"], r["task_id"]),
        lambda r: (r["head"] >> 10).astype(np.int32),
    )


def run_rows(
    runs: Runs,
    batch: np.ndarray,
    stream: SliceStream,
    dev: int,
    clock: DeviceClock,
    names: list[str],
    source: str,
) -> dict:
    known = runs.start_syscnt >= 0
    start_ns = ns(clock, np.maximum(runs.start_syscnt, 0))
    if not isinstance(start_ns, pa.Array):
        start_ns = pa.array(start_ns, mask=~known)
    # each distinct task type named once; the records get indices into those names
    type_names = map_distinct(runs.task_type, lambda t: names[t] if 0 <= t < len(names) else f"type {t}")
    return {
        "device_id": np.full(len(runs), dev, np.int32),
        "source_file": stream.source_files(runs.offset),
        "seq": runs.seq,
        "source": source,
        "stream_id": runs.stream_id.astype(np.int32),
        "task_id": runs.task_id.astype(np.int32),
        "batch_id": batch.astype(np.int32),
        "task_type": runs.task_type.astype(np.int32),
        "task_type_name": type_names,
        "start_syscnt": pa.array(runs.start_syscnt, mask=~known),
        "end_syscnt": runs.end_syscnt,
        "start_ns": start_ns,
        "end_ns": ns(clock, runs.end_syscnt),
    }


def _pmu_columns(b: Batch, stream: SliceStream, dev: int, kind: str, counters: np.ndarray) -> dict:
    out = {**base_columns(b, stream, dev), "record_kind": kind}
    for i in range(8):
        out[f"counter_{i}"] = counters[:, i].astype(np.uint64)
    return out


def read_aicore(s: Stream, dev: int, clock: DeviceClock, sink, log: IssueLog, sample_based: bool) -> None:
    if sample_based:
        stream, batches = read_fixed(s.files, prof_layouts.AIC_SAMPLE, log, dev, aged=True)
        for b in batches:
            r = b.records
            sink.write(
                "pmu_counters",
                {
                    **_pmu_columns(b, stream, dev, "aic_sample", r["counters"]),
                    "core_id": r["core_id"].astype(np.int32),
                    "total_cycles": r["task_cyc"].astype(np.uint64),
                    "timestamp_syscnt": r["timestamp"].astype(I64),
                    "ts_ns": ns(clock, r["timestamp"]),
                },
            )
        return
    stream, batches = read_fixed(
        s.files, prof_layouts.AIC_PMU, log, dev, aged=True, device_magic=prof_layouts.DEVICE_MAGIC
    )
    for b in batches:
        r = b.records
        sink.write(
            "pmu_counters",
            {
                **_pmu_columns(b, stream, dev, "aic_pmu", r["counters"]),
                "stream_id": (r["stream_id"] % 2048).astype(np.int32),
                "task_id": r["task_id"].astype(np.int32),
                "task_type": np.zeros(
                    len(r), np.int32
                ),  # one record per AI Core task end (formats.md#aic-pmu)
                "total_cycles": r["total_cycle"].astype(np.uint64),
            },
        )


def read_ffts(s: Stream, dev: int, clock: DeviceClock, sink, log: IssueLog) -> None:
    """Context PMU records; block PMU records are counted, overflowed ones reported (msprof drops them)."""
    stream, batches = read_fixed(
        s.files, prof_layouts.FFTS_PMU, log, dev, aged=True, device_magic=prof_layouts.DEVICE_MAGIC
    )
    tally = Tally()
    overflow = 0
    for b in batches:
        r = b.records
        func = r["head"] & 0x3F
        ctx = func == prof_layouts.FFTS_CONTEXT_PMU
        for k in np.unique(func[~ctx]).tolist():
            tally.add(
                stream,
                b.offsets[func == k],
                prof_layouts.FFTS_PMU.size,
                "FFTS block PMU" if k == prof_layouts.FFTS_BLOCK_PMU else f"ffts_profile func type {k:06b}",
            )
        ov = ctx & (((r["subtask"] >> 10) & 1) == 1)
        overflow += int(ov.sum())
        keep = ctx & ~ov
        sub = b.where(keep)
        r = sub.records
        st, tk = stars_ids(r["stream_id"], r["task_id"])
        ffts_type = (r["ffts"] >> 13).astype(np.int32)
        subtask_type = (r["subtask"] & 0xFF).astype(np.int32)
        # msprof FftsPmuBean.is_aic_data: traditional AIC, FFTS+ AIC context, or a MIX AIC one
        aic = (
            (ffts_type == 0)
            | ((ffts_type == 4) & ((subtask_type == 0) | (subtask_type == 6)))
            | (ffts_type == 5)
        )
        sink.write(
            "pmu_counters",
            {
                **_pmu_columns(sub, stream, dev, "ffts_pmu", r["counters"]),
                "stream_id": st.astype(np.int32),
                "task_id": tk.astype(np.int32),
                "task_type": np.where(aic, 0, 66).astype(np.int32),  # 0 AI Core, 66 AI vector (runtime codes)
                "context_id": r["subtask_id"].astype(I64),
                "total_cycles": r["total_cycle"].astype(np.uint64),
                "start_syscnt": r["start_syscnt"].astype(I64),
                "timestamp_syscnt": r["end_syscnt"].astype(I64),
                "ts_ns": ns(clock, r["end_syscnt"]),
            },
        )
    tally.flush(log, dev)
    if overflow:
        log.add(
            Issue(
                s.name,
                "pmu_overflow",
                f"{overflow} FFTS context PMU record(s) flagged overflow; left out as msprof does",
                device_id=dev,
                count=overflow,
            )
        )


def read_lpm(s: Stream, dev: int, clock: DeviceClock, sink, log: IssueLog) -> int:
    stream, batches = read_fixed(s.files, prof_layouts.LPM_FREQ, log, dev, aged=True)
    rows = 0
    for b in batches:
        r = b.records
        count = np.minimum(r["count"].astype(I64), prof_layouts.LPM_FREQ_ENTRIES)
        keep = np.arange(prof_layouts.LPM_FREQ_ENTRIES)[None, :] < count[:, None]
        syscnt = r["entries"]["syscnt"][keep].astype(I64)
        mhz = r["entries"]["freq_mhz"][keep].astype(np.float64)
        rec = np.repeat(np.arange(len(r)), count)
        sink.write(
            "freq_samples",
            {
                "device_id": np.full(len(syscnt), dev, np.int32),
                "source_file": stream.source_files(b.offsets[rec]),
                "seq": b.seq[rec],
                "entry": (np.arange(len(syscnt)) - np.repeat(np.cumsum(count) - count, count)).astype(
                    np.int32
                ),
                "timestamp_syscnt": syscnt,
                "ts_ns": ns(clock, syscnt),
                "aic_freq_mhz": mhz,
            },
        )
        rows += len(syscnt)
        bad = int((r["count"] > prof_layouts.LPM_FREQ_ENTRIES).sum())
        if bad:
            log.add(
                Issue(
                    s.name,
                    "bad_record",
                    f"{bad} lpmFreqConv record(s) claim more than 55 entries; 55 read",
                    device_id=dev,
                    count=bad,
                )
            )
    return rows


def read_training_trace(s: Stream, dev: int, clock: DeviceClock, sink, log: IssueLog) -> None:
    """MindSpore 0.5 step keypoints, tags translated to msprof's (raw tag kept in raw_tag_id).

    mindinsight's step-trace parser: a tag above 255 (the job id) or 0 starts a step, 255 ends
    it, 1 is FP, 2 is BP, the others (3 to 254) are all-reduce points, in pairs per stream
    whose first (start) point has an odd tag (3, 5, ...) and second (end) point the next even
    tag. They become MODEL_START (0), MODEL_END (1), FP (2), BP (3) and 10000 + tag - 3, so that
    a start is even and an end odd, as msprof's all-reduce tags are (10000 opens, 10001 closes);
    model id is the job id of the step, index id the step number.
    """
    stream, batches = read_fixed(s.files, prof_layouts.TRAINING_TRACE, log, dev, aged=False)
    steps = 0
    job = 0
    for b in batches:
        r = b.records
        tag = r["tag"].astype(np.uint64)
        start = (tag > prof_layouts.TRAINING_TRACE_END) | (tag == 0)
        mapped = np.select(
            [start, tag == prof_layouts.TRAINING_TRACE_END, tag == 1, tag == 2],
            [0, 1, 2, 3],
            default=10000 - 3 + np.minimum(tag, 1 << 20).astype(I64),
        )
        idx = steps + np.cumsum(start)
        steps = int(idx[-1]) if len(idx) else steps
        pos = np.where(start, np.arange(len(r)), -1)
        last = np.maximum.accumulate(pos)
        jobs = np.where(last >= 0, tag[np.maximum(last, 0)].astype(I64), job)
        job = int(jobs[-1]) if len(jobs) else job
        sink.write(
            "step_trace",
            {
                **base_columns(b, stream, dev),
                "model_id": jobs,
                "index_id": idx.astype(I64),
                "tag_id": mapped.astype(np.int32),
                "raw_tag_id": np.minimum(tag, np.uint64(2**63 - 1)).astype(I64),
                "stream_id": (r["stream_id"] % 2048).astype(np.int32),
                "task_id": r["task_id"].astype(np.int32),
                "timestamp_syscnt": r["syscnt"].astype(I64),
                "ts_ns": ns(clock, r["syscnt"]),
            },
        )


def read_ms_graph_desc(s: Stream, log: IssueLog) -> dict[str, str]:
    """op name -> op type from MindSpore ``graph_desc_info`` lines (``op_name:<n> op_type:<t> ...``)."""
    out: dict[str, str] = {}
    for f in s.files:
        raw = f.path.read_bytes()
        for line in raw.decode("utf-8", "replace").splitlines():
            fields = dict(part.split(":", 1) for part in line.split(" ") if ":" in part)
            if "op_name" in fields and "op_type" in fields:
                out[fields["op_name"]] = fields["op_type"]
        log.decoded(len(raw))  # read as a dictionary, like hash_dic
    return out


def _ms_task_line(line: bytes):
    parts = line.decode("utf-8", "replace").split()
    if len(parts) == 4 and all(p.isdigit() for p in parts[1:]):
        return parts[0], int(parts[1]), int(parts[2]), int(parts[3])
    return None


def read_ms_task_desc(s: Stream, dev: int, op_types: dict[str, str], sink, log: IssueLog) -> None:
    """MindSpore ``task_desc_info`` text: ``<op name> <block dim> <task id> <stream id>`` per line."""
    for f in s.files:
        rows = parse_lines(
            f.path.read_bytes(),
            _ms_task_line,
            log,
            f.rel,
            dev,
            "bad_text_line",
            "'<op> <block dim> <task id> <stream id>'",
        )
        seq = [i for i, _ in rows]
        names, blocks, tasks, streams = (
            (list(col) for col in zip(*(v for _, v in rows))) if rows else ([], [], [], [])
        )
        n = len(names)
        sink.write(
            "task_ops",
            {
                "device_id": np.full(n, dev, np.int32),
                "source_file": f.rel,
                "seq": np.array(seq, I64),
                "source": "ms_task_desc",
                "stream_id": np.array(streams, np.int32),
                "task_id": np.array(tasks, np.int32),
                "op_name": names,
                "op_type": [op_types.get(x) for x in names],
                "block_dim": np.array(blocks, np.int32),
            },
        )
