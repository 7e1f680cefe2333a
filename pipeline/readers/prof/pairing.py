"""Device task executions from start/end logs, and batch ids (docs/formats.md#rule-pairing, #batch-ids).

Pairing (msprof ``HwtsCalculator._prep_data``; STARS ``log_base_parser`` in the usual
case): per (stream, task), in log order, a start waits for the next end of the same key;
a second start replaces the first (which is left unpaired), an end without a waiting start
is an execution with an unknown start. msprof's STARS parser matches with look-ahead in
time order; here both use the same rule, STARS in time order.

Batch ids tell apart executions whose 16-bit task ids repeat. With a driver that writes
flip records (``drvVersion`` >= 0x072211) msprof's ``FlipCalculator`` counts, per stream,
the flips at or before each task, and moves tasks just before a flip whose task id is
below the flip's into the new batch. Older drivers count task-id wrap-arounds: per
stream in time order, the batch grows whenever a task id is not above the previous one
(msprof 2022 ``deal_batch_id``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STREAM_DESTROY_FLIP = 65535


@dataclass
class Logs:
    """Start/end logs of one device, as parallel arrays."""

    stream_id: np.ndarray  # int64
    task_id: np.ndarray  # int64
    is_end: np.ndarray  # bool
    syscnt: np.ndarray  # int64
    seq: np.ndarray  # int64, record index in the stream
    offset: np.ndarray  # int64, stream offset
    task_type: np.ndarray  # int32

    @classmethod
    def concat(cls, parts: list[Logs]) -> Logs:
        if not parts:
            z = np.zeros(0, np.int64)
            return cls(z, z, z.astype(bool), z, z, z, z.astype(np.int32))
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))

    def __len__(self) -> int:
        return len(self.seq)


@dataclass
class Runs:
    stream_id: np.ndarray
    task_id: np.ndarray
    task_type: np.ndarray
    start_syscnt: np.ndarray  # -1 where the start is unknown
    end_syscnt: np.ndarray
    seq: np.ndarray  # seq of the end log
    offset: np.ndarray  # stream offset of the end log
    orphan_starts: np.ndarray  # stream offsets of starts that no end closed

    def __len__(self) -> int:
        return len(self.seq)


def _pair(logs: Logs, by_time: bool) -> tuple[Runs, np.ndarray]:
    """Executions of the logs, and the indices of the starts still open at the end (the last log
    of their key is a start): a later chunk may close them. Runs.orphan_starts holds the others."""
    order = _key_order(logs, by_time)
    s, t, e = logs.stream_id[order], logs.task_id[order], logs.is_end[order]
    n = len(order)
    same_prev = np.zeros(n, bool)
    if n > 1:
        same_prev[1:] = (s[1:] == s[:-1]) & (t[1:] == t[:-1])
    prev_start = np.zeros(n, bool)
    prev_start[1:] = ~e[:-1]
    paired_end = e & same_prev & prev_start
    start_used = np.zeros(n, bool)
    if n > 1:
        start_used[:-1] = paired_end[1:]
    last_of_key = np.ones(n, bool)
    last_of_key[:-1] = ~same_prev[1:]
    unclosed = ~e & ~start_used
    still_open = unclosed & last_of_key
    orphan = unclosed & ~last_of_key
    ends = np.flatnonzero(e)
    start_idx = np.where(paired_end[ends], ends - 1, -1)
    cnt = logs.syscnt[order]
    start_cnt = np.where(start_idx >= 0, cnt[np.maximum(start_idx, 0)], -1)
    # an end without a waiting start keeps start -1; the task type is the end log's
    out_order = np.argsort(cnt[ends], kind="stable")
    ends, start_cnt = ends[out_order], start_cnt[out_order]
    oi = order[ends]
    runs = Runs(
        logs.stream_id[oi],
        logs.task_id[oi],
        logs.task_type[oi],
        start_cnt,
        logs.syscnt[oi],
        logs.seq[oi],
        logs.offset[oi],
        logs.offset[order[np.flatnonzero(orphan)]],
    )
    return runs, order[np.flatnonzero(still_open)]


def _key_order(logs: Logs, by_time: bool) -> np.ndarray:
    """Indices of the logs by (stream, task), then time (``by_time``), then record index. Ids that
    fit are sorted as one combined key, cheaper than a sort over four keys."""
    s, t = logs.stream_id, logs.task_id
    fits = len(s) and min(s.min(), t.min()) >= 0 and s.max() < 2**31 and t.max() < 2**32
    keys = [(s.astype(np.int64) << 32) | t] if fits else [t, s]
    return np.lexsort((logs.seq, *([logs.syscnt] if by_time else []), *keys))


class Pairer:
    """Pairs a stream's logs chunk by chunk: the start still open at the end of a chunk, per key,
    is carried into the next (as msprof's STARS parser carries its last unmatched start). The
    result equals feeding the whole stream as one chunk when each key's logs arrive in order across chunks."""

    def __init__(self, by_time: bool):
        self.by_time = by_time
        self.carry: Logs | None = None

    def feed(self, *parts: Logs) -> Runs:
        """Executions closed by the logs of ``parts`` (one chunk, in pieces: joined once, with the carry)."""
        parts = (self.carry, *parts) if self.carry is not None else parts
        logs = parts[0] if len(parts) == 1 else Logs.concat(list(parts))
        runs, open_starts = _pair(logs, self.by_time)
        self.carry = Logs(*(getattr(logs, f)[open_starts] for f in Logs.__dataclass_fields__))
        return runs

    def finish(self) -> np.ndarray:
        """Stream offsets of the starts no end ever closed."""
        left = np.zeros(0, np.int64) if self.carry is None else np.sort(self.carry.offset)
        self.carry = None
        return left


def task_time(runs: Runs) -> np.ndarray:
    """The time msprof sorts tasks by for batch ids: the start, or the end when the start is unknown."""
    return np.where(runs.start_syscnt >= 0, runs.start_syscnt, runs.end_syscnt)


def batch_from_wraps(
    stream_id: np.ndarray,
    task_id: np.ndarray,
    ts: np.ndarray,
    carry: dict[int, tuple[int, int]] | None = None,
) -> np.ndarray:
    """Per stream in time order, +1 whenever a task id is not above the previous one.

    ``carry`` (stream -> (last task id, its batch)) continues the count from an earlier chunk
    of the same stream and is updated for the next one.
    """
    n = len(ts)
    batch = np.zeros(n, np.int64)
    if n == 0:
        return batch
    order = np.lexsort((task_id, ts, stream_id))
    s, t = stream_id[order], task_id[order]
    first = np.ones(n, bool)
    first[1:] = s[1:] != s[:-1]
    step = np.zeros(n, np.int64)
    step[1:] = ((s[1:] == s[:-1]) & (t[1:] <= t[:-1])).astype(np.int64)
    start_batch = np.zeros(n, np.int64)  # batch the stream enters this chunk with
    firsts = np.flatnonzero(first)
    if carry:
        for i in firsts.tolist():  # one per stream
            last = carry.get(int(s[i]))
            if last is not None:
                step[i] = int(t[i] <= last[0])
                start_batch[i] = last[1]
    csum = np.cumsum(step)
    before = csum - step  # csum just before each position
    group = np.cumsum(first) - 1
    batch[order] = csum - before[firsts][group] + start_batch[firsts][group]
    if carry is not None:
        lasts = np.append(firsts[1:] - 1, n - 1)
        for i in lasts.tolist():
            carry[int(s[i])] = (int(t[i]), int(batch[order[i]]))
    return batch


def batch_from_flips(
    stream_id: np.ndarray,
    task_id: np.ndarray,
    ts: np.ndarray,
    flip_stream: np.ndarray,
    flip_ts: np.ndarray,
    flip_task: np.ndarray,
    flip_num: np.ndarray,
) -> np.ndarray:
    """msprof ``FlipCalculator.compute_batch_id`` (batch = flips so far, with its calibration)."""
    n = len(ts)
    batch = np.zeros(n, np.int64)
    for s in np.unique(stream_id).tolist():
        idx = np.flatnonzero(stream_id == s)
        idx = idx[np.lexsort((task_id[idx], ts[idx]))]
        fmask = flip_stream == s
        if not fmask.any():
            continue
        f_order = np.argsort(flip_ts[fmask], kind="stable")
        fts, ftask, fnum = flip_ts[fmask][f_order], flip_task[fmask][f_order], flip_num[fmask][f_order]
        b = np.searchsorted(fts, ts[idx], side="right").astype(np.int64)
        tids = task_id[idx]
        for k in range(len(fts)):
            if fnum[k] == STREAM_DESTROY_FLIP or ftask[k] == 0:
                continue
            pos = int(np.searchsorted(ts[idx], fts[k], side="left"))  # first task at or after the flip
            j = pos - 1
            while j >= 0 and tids[j] < ftask[k]:
                b[j] = max(b[j], k + 1)
                j -= 1
        batch[idx] = b
    return batch
