"""Large synthetic dumps, fast: a small generated dump repeated K times along its timeline.

The generators (``pipeline.synth.hiprof`` / ``pipeline.synth.prof``) decide every event in
Python and keep them all in memory, which is right for tests and far too slow for the
gigabyte dumps a benchmark needs. ``scale`` takes a dump they wrote (every stream in one
slice) and writes a dump whose every data stream is the base stream repeated ``copies``
times: copy ``k`` has every time field moved ``k`` periods later (host fields in host
clock units, device fields in device counter ticks, one period the same real time for
both) and every iteration / inference / batch counter moved on by ``k`` base blocks. The
fields are found with the readers' own layouts (``pipeline.layouts``); the edit is numpy
over precomputed byte positions, and copies are streamed to disk, so memory holds one base
stream whatever the output size.

Files that describe the run rather than its timeline (control files, hash and type
dictionaries, model loads, graph id maps, frequency samples) are written once.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.layouts import Layout
from pipeline.layouts import hiprof as hiprof_layouts
from pipeline.layouts import prof as prof_layouts
from pipeline.readers.decode import tlv_runs

SLICE_RE = re.compile(r"^(?P<stem>.+)\.slice_(?P<n>\d+)$")


@dataclass
class FieldEdits:
    """Byte positions of fields to move, grouped by (width, kind)."""

    edits: list[tuple[np.ndarray, str, str]] = field(
        default_factory=list
    )  # (byte positions, '<u8'|..., kind)
    record: int = 1  # record size where slices must hold whole records (host files)

    def add(self, positions: np.ndarray, fmt: str, kind: str) -> None:
        if len(positions):
            self.edits.append((positions.astype(np.int64), fmt, kind))


def _fixed_positions(n: int, size: int, layout: Layout, names: list[str]) -> list[tuple[np.ndarray, str]]:
    base = np.arange(n, dtype=np.int64) * size
    out = []
    for name in names:
        dt, off = layout.dtype.fields[name][:2]
        out.append((base + off, dt.str))
    return out


# stem prefix -> (layout, host time fields, iteration fields, batch fields); None: written once
HIPROF_FIXED = {
    "AclModule.": (hiprof_layouts.ACL_API, ["begin", "end"], [], []),
    "Runtime.api.": (hiprof_layouts.RUNTIME_API, ["entry", "exit"], [], []),
    "Runtime.task_track.": (hiprof_layouts.RUNTIME_TASK_TRACK, ["timestamp"], [], []),
    "Framework.task_desc_info.": (hiprof_layouts.GE_TASK_DESC, ["timestamp"], ["cur_iter"], []),
    "Framework.model_time_info": (
        hiprof_layouts.GE_MODEL_TIME,
        ["input_start", "input_end", "infer_start", "infer_end", "output_start", "output_end"],
        ["request_id"],
        [],
    ),
}
PROF_HOST = {
    "api_event": (prof_layouts.API_EVENT, ["begin", "end"], [], []),
    "compact.task_track": (prof_layouts.TASK_TRACK, ["timestamp"], [], ["batch_id"]),
    "compact.node_basic_info": (prof_layouts.NODE_BASIC_INFO, ["timestamp"], [], []),
}
PROF_DEVICE = {
    "stars_soc.data": (prof_layouts.STARS_ACSQ, ["syscnt"]),
    "hwts.data": (prof_layouts.HWTS_LOG, ["syscnt"]),
    "ffts_profile.data": (prof_layouts.FFTS_PMU, ["start_syscnt", "end_syscnt"]),
    "aicore.data": (prof_layouts.AIC_PMU, []),
}


def _edits_for(name: str, buf: np.ndarray) -> FieldEdits | None:
    """The fields of one base stream to move per copy; None for a stream written once."""
    e = FieldEdits()
    n_bytes = len(buf)
    for prefix, (layout, host, iters, _batches) in HIPROF_FIXED.items():
        if name.startswith(prefix):
            n = n_bytes // layout.size
            for pos, fmt in _fixed_positions(n, layout.size, layout, host):
                e.add(pos, fmt, "host")
            for pos, fmt in _fixed_positions(n, layout.size, layout, iters):
                e.add(pos, fmt, "iter")
            return e
    for key, (layout, host, _iters, batches) in PROF_HOST.items():
        if key in name and (name.startswith("aging.") or name.startswith("unaging.")):
            n = n_bytes // layout.size
            e.record = layout.size
            rec = np.frombuffer(buf, layout.dtype, count=n)
            for (pos, fmt), fname in zip(_fixed_positions(n, layout.size, layout, host), host):
                if layout is prof_layouts.API_EVENT and fname == "end":
                    pos = pos[
                        rec["end"] != np.uint64(prof_layouts.EVENT_FLAG)
                    ]  # EVENT records: the end is a flag
                e.add(pos, fmt, "host")
            for pos, fmt in _fixed_positions(n, layout.size, layout, batches):
                e.add(pos, fmt, "batch")
            return e
    for key, (layout, dev) in PROF_DEVICE.items():
        if name.startswith(key):
            n = n_bytes // layout.size
            for pos, fmt in _fixed_positions(n, layout.size, layout, dev):
                e.add(pos, fmt, "dev")
            return e
    if name.startswith("ts_track.data") and _is_prof_ts(buf):
        n = n_bytes // prof_layouts.TS_TRACK_SIZE
        base = np.arange(n, dtype=np.int64) * prof_layouts.TS_TRACK_SIZE
        tags = buf[base + 1]
        known = np.isin(tags, list(prof_layouts.TS_LAYOUTS))
        e.add(base[known] + 8, "<u8", "dev")
        e.add(base[tags == prof_layouts.TS_STEP_TRACE.tag] + 16, "<u8", "iter")
        return e
    if name.startswith("ts_track.data") or name.startswith("aicore.data"):  # generation-1 TLV streams
        runs, consumed, error = tlv_runs(buf, hiprof_layouts.DECODED_TAGS, hiprof_layouts.COUNTED_TAGS)
        if error is not None or consumed != n_bytes:
            raise ValueError(f"{name}: base stream does not frame ({error})")
        by: dict[tuple[int, str, str], list[np.ndarray]] = {}
        for r in runs:
            if r.tag not in hiprof_layouts.DECODED_TAGS:
                continue
            layout = hiprof_layouts.DECODED_TAGS[r.tag]
            starts = r.pos + np.arange(r.count, dtype=np.int64) * r.size
            for fname, kind in (("timestamp", "dev"), ("index_id", "iter")):
                if fname in layout.dtype.names:
                    dt, off = layout.dtype.fields[fname][:2]
                    by.setdefault((off, dt.str, kind), []).append(starts + off)
        for (_, fmt, kind), parts in by.items():
            e.add(np.concatenate(parts), fmt, kind)
        return e
    return None


def _is_prof_ts(buf: np.ndarray) -> bool:
    """A 40-byte generation-2/3 ts_track stream (every record's byte 0..3 are not a TLV header of its size)."""
    if len(buf) % prof_layouts.TS_TRACK_SIZE or len(buf) < 4:
        return False
    size = int(buf[2]) | (int(buf[3]) << 8)
    return (
        size == prof_layouts.TS_TRACK_SIZE
        or int(buf[1]) in prof_layouts.TS_LAYOUTS
        and int(buf[1]) not in hiprof_layouts.DECODED_TAGS
    )


@dataclass
class Clocks:
    host_mhz: float | None  # None: host fields are ns
    dev_mhz: float


def _info_clocks(base: Path) -> Clocks:
    host_mhz, dev_mhz = None, 100.0
    for p in sorted(base.rglob("info.json*")):
        if p.name.endswith(".done"):
            continue
        try:
            info = json.loads(p.read_text())
        except (ValueError, OSError):
            continue
        for d in info.get("DeviceInfo") or []:
            if d.get("hwts_frequency"):
                dev_mhz = float(d["hwts_frequency"])
        cpu = info.get("CPU") or []
        if cpu and cpu[0].get("Frequency") and "PROF_" in str(p):
            host_mhz = float(cpu[0]["Frequency"])
    return Clocks(host_mhz, dev_mhz)


def _gather(buf: np.ndarray, pos: np.ndarray, fmt: str) -> np.ndarray:
    w = np.dtype(fmt).itemsize
    idx = pos[:, None] + np.arange(w)
    return np.ascontiguousarray(buf[idx]).view(fmt).reshape(-1)


def _scatter(buf: np.ndarray, pos: np.ndarray, fmt: str, values: np.ndarray) -> None:
    w = np.dtype(fmt).itemsize
    buf[pos[:, None] + np.arange(w)] = values.astype(fmt).view(np.uint8).reshape(-1, w)


def _span(streams: dict, kind: str) -> tuple[int, int] | None:
    lo, hi = None, None
    for buf, e in streams.values():
        for pos, fmt, k in e.edits:
            if k != kind:
                continue
            v = _gather(buf, pos, fmt).astype(np.int64)
            v = v[v > 0]
            if len(v):
                lo = int(v.min()) if lo is None else min(lo, int(v.min()))
                hi = int(v.max()) if hi is None else max(hi, int(v.max()))
    return None if lo is None else (lo, hi)


def scale(
    base: Path,
    out: Path,
    copies: int,
    slice_bytes: int = 64 * 1024 * 1024,
    iter_step: int | None = None,
    batch_step: int | None = None,
) -> int:
    """Write ``base`` repeated ``copies`` times along its timeline into ``out``; returns the bytes written."""
    base, out = Path(base), Path(out)
    clocks = _info_clocks(base)
    streams, once = _streams(base)
    # one period: the base timeline's span, in ns, rounded up to a whole millisecond
    spans_ns = []
    h = _span(streams, "host")
    if h:
        spans_ns.append((h[1] - h[0]) * (1000 / clocks.host_mhz if clocks.host_mhz else 1))
    d = _span(streams, "dev")
    if d:
        spans_ns.append((d[1] - d[0]) * 1000 / clocks.dev_mhz)
    period_ns = (int(max(spans_ns, default=0)) // 1_000_000 + 2) * 1_000_000
    step = {
        "host": period_ns * clocks.host_mhz // 1000 if clocks.host_mhz else period_ns,
        "dev": int(period_ns * clocks.dev_mhz // 1000),
        "iter": iter_step if iter_step is not None else max(1, _max_field(streams, "iter")),
        "batch": batch_step if batch_step is not None else _max_field(streams, "batch") + 1,
    }
    step = {k: int(v) for k, v in step.items()}
    total = 0
    for p in once:
        dst = out / p.relative_to(base)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, dst)
        done = p.with_name(p.name + ".done")
        if done.exists():
            shutil.copyfile(done, dst.with_name(dst.name + ".done"))
        total += p.stat().st_size
    for p, (buf, e) in streams.items():
        stem = SLICE_RE.match(p.name).group("stem")
        per = max(1, slice_bytes // e.record) * e.record
        dst_dir = out / p.parent.relative_to(base)
        dst_dir.mkdir(parents=True, exist_ok=True)
        base_vals = [(pos, fmt, kind, _gather(buf, pos, fmt).astype(np.int64)) for pos, fmt, kind in e.edits]
        w = _SliceWriter(dst_dir, stem, per)
        for k in range(copies):
            cur = buf.copy()
            for pos, fmt, kind, v in base_vals:
                _scatter(cur, pos, fmt, v + k * step[kind])
            w.write(cur)
        w.close()
        total += w.total
    return total


def _streams(base: Path) -> tuple[dict[Path, tuple[np.ndarray, FieldEdits]], list[Path]]:
    """The base's data streams that ``scale`` repeats (each with its field edits), and the
    files it writes once."""
    streams: dict[Path, tuple[np.ndarray, FieldEdits]] = {}
    once: list[Path] = []
    for p in sorted(base.rglob("*")):
        if not p.is_file() or p.name.endswith(".done"):
            continue
        m = SLICE_RE.match(p.name)
        if not m or "data" not in p.parent.name:
            once.append(p)
            continue
        buf = np.fromfile(p, np.uint8)
        e = _edits_for(m.group("stem"), buf)
        if e is None:
            once.append(p)
            continue
        if m.group("n") != "0" or p.with_name(f"{m.group('stem')}.slice_1").exists():
            raise ValueError(
                f"{p}: the base dump must hold every stream in one slice (use a large --slice-bytes)"
            )
        streams[p] = (buf, e)
    return streams, once


def copies_for(base: Path, target_bytes: float) -> int:
    """How many copies of ``base`` make the dump ``scale`` writes nearest ``target_bytes`` (at
    least one): its streams repeated, its other files once."""
    streams, once = _streams(Path(base))
    per_copy = sum(len(buf) for buf, _ in streams.values())
    fixed = sum(p.stat().st_size for p in once)
    return max(1, round((target_bytes - fixed) / per_copy)) if per_copy else 1


def _max_field(streams: dict, kind: str) -> int:
    m = 0
    for buf, e in streams.values():
        for pos, fmt, k in e.edits:
            if k == kind:
                v = _gather(buf, pos, fmt)
                if len(v):
                    m = max(m, int(v.max()))
    return m


class _SliceWriter:
    """``stem.slice_N`` files of ``per`` bytes, with ``.done`` markers, written as bytes arrive."""

    def __init__(self, folder: Path, stem: str, per: int):
        self.folder, self.stem, self.per = folder, stem, per
        self.n, self.fh, self.in_slice, self.total = 0, None, 0, 0

    def write(self, data: np.ndarray) -> None:
        mv = memoryview(data)
        while len(mv):
            if self.fh is None:
                self.fh = open(self.folder / f"{self.stem}.slice_{self.n}", "wb")
                self.in_slice = 0
            k = min(len(mv), self.per - self.in_slice)
            self.fh.write(mv[:k])
            mv = mv[k:]
            self.in_slice += k
            self.total += k
            if self.in_slice == self.per:
                self._finish()

    def _finish(self) -> None:
        self.fh.close()
        (self.folder / f"{self.stem}.slice_{self.n}.done").write_text(f"filesize:{self.in_slice}\n")
        self.fh = None
        self.n += 1

    def close(self) -> None:
        if self.fh is not None:
            self._finish()
