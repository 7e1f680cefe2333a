"""Task Scheduler instance numbers counted while reading, so the build need not sort every state.

msprof's TIME_LINE state machine (analysis-and-exports §A2.2) sorts the states of one
(device, kind, stream, task) by (timestamp, state) and closes an instance at every COMPLETE.
A state's instance number is therefore the count of COMPLETEs before it in that order.
The Task Scheduler writes its records as things happen, so the states of one task arrive
in that order already; then the count can be kept while the records stream past, per task,
without a sort of the whole run.

``InstanceNumbers.add`` numbers one batch of ``task_states`` columns. Each task's count and
last (time, state, seq) are carried to the next batch. A device whose states arrive out of
order for any task (or without a time, or with ids too wide for the packed key) is given up:
its rows get no number from then on, and ``sql/staging/stg_task_instances.sql`` numbers
every state of that device itself, with the sort. A number, when given, is exactly the one
the sort would give.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

MACHINE_KINDS = ("time_line", "ts_memcpy")  # the record kinds the state machine reads
MACHINE_STATES = (1, 2, 3, 4)  # WAITING, RUNNING, COMPLETE, PENDING
COMPLETE = 3

# the task key packed into one int64: device | memcpy flag | stream (11 bits) | task (32 bits)
_TASK_BITS, _STREAM_BITS, _DEVICE_BITS = 32, 11, 19


def _at_or_after(t1, s1, q1, t0, s0, q0) -> np.ndarray:
    """(t1, s1, q1) >= (t0, s0, q0), element-wise and lexicographic."""
    return (t1 > t0) | ((t1 == t0) & ((s1 > s0) | ((s1 == s0) & (q1 >= q0))))


class InstanceNumbers:
    """Per-task COMPLETE counts of one ingest, carried from batch to batch."""

    def __init__(self) -> None:
        self._keys = np.empty(0, np.int64)  # sorted task keys seen so far
        self._count = np.empty(0, np.int64)  # COMPLETEs seen per key
        self._last_ts = np.empty(0, np.int64)
        self._last_state = np.empty(0, np.int64)
        self._last_seq = np.empty(0, np.int64)
        self.given_up: set[int] = set()  # devices the build numbers itself

    def add(self, columns: dict) -> dict:
        """The batch's columns with ``instance_no`` (NULL where not counted here)."""
        n = len(columns["seq"])
        out = np.full(n, -1, np.int64)
        rows = self._machine_rows(columns, n)
        if len(rows):
            self._number(columns, rows, out)
        return {**columns, "instance_no": pa.array(out, mask=out < 0)}

    def _machine_rows(self, columns: dict, n: int) -> np.ndarray:
        kind = columns["record_kind"]
        if isinstance(kind, str):
            if kind not in MACHINE_KINDS:
                return np.empty(0, np.int64)
            in_machine = np.ones(n, bool)
        else:
            in_machine = np.isin(np.asarray(kind, dtype=object), MACHINE_KINDS)
        in_machine &= np.isin(np.asarray(columns["task_state"]), MACHINE_STATES)
        return np.flatnonzero(in_machine)

    def _number(self, columns: dict, rows: np.ndarray, out: np.ndarray) -> None:
        device = np.asarray(columns["device_id"])[rows].astype(np.int64)
        kind = columns["record_kind"]
        if isinstance(kind, str):
            memcpy = np.full(len(rows), int(kind == "ts_memcpy"), np.int64)
        else:
            memcpy = (np.asarray(kind, dtype=object)[rows] == "ts_memcpy").astype(np.int64)
        stream = np.asarray(columns["stream_id"])[rows].astype(np.int64)
        task = np.asarray(columns["task_id"])[rows].astype(np.int64)
        ts_col = columns["ts_ns"]
        if isinstance(ts_col, (pa.Array, pa.ChunkedArray)):
            has_ts = ~np.asarray(ts_col.is_null())[rows]
            ts = np.asarray(ts_col.fill_null(0))[rows].astype(np.int64)
        else:
            has_ts = np.ones(len(rows), bool)
            ts = np.asarray(ts_col)[rows].astype(np.int64)
        state = np.asarray(columns["task_state"])[rows].astype(np.int64)
        seq = np.asarray(columns["seq"])[rows].astype(np.int64)

        fits = ((device >= 0) & (device < 1 << _DEVICE_BITS) & (stream >= 0) & (stream < 1 << _STREAM_BITS)
                & (task >= 0) & (task < 1 << _TASK_BITS))
        self.given_up.update(np.unique(device[~(has_ts & fits)]).tolist())
        keep = ~np.isin(device, list(self.given_up)) if self.given_up else np.ones(len(rows), bool)
        if not keep.any():
            return
        rows, device, memcpy, stream, task, ts, state, seq = (
            a[keep] for a in (rows, device, memcpy, stream, task, ts, state, seq))
        key = (((device << 1 | memcpy) << _STREAM_BITS | stream) << _TASK_BITS) | task

        o = np.argsort(key, kind="stable")  # arrival order kept within a task
        k, t, s, q = key[o], ts[o], state[o], seq[o]
        new_group = np.empty(len(k), bool)
        new_group[0] = True
        np.not_equal(k[1:], k[:-1], out=new_group[1:])
        starts = np.flatnonzero(new_group)
        group = np.cumsum(new_group) - 1
        uniq = k[starts]

        pos, seen, count, last_ts, last_state, last_seq = self._carried(uniq)
        late = ~_at_or_after(t[1:], s[1:], q[1:], t[:-1], s[:-1], q[:-1]) & ~new_group[1:]
        late_first = seen & ~_at_or_after(t[starts], s[starts], q[starts], last_ts, last_state, last_seq)
        if late.any() or late_first.any():
            bad = np.concatenate([k[1:][late], uniq[late_first]]) >> (_STREAM_BITS + _TASK_BITS + 1)
            self.given_up.update(np.unique(bad).tolist())
            self._number(columns, rows, out)  # again, without the devices given up
            return

        complete = (s == COMPLETE).astype(np.int64)
        before = np.cumsum(complete) - complete  # COMPLETEs before the row in this batch
        out[rows[o]] = before - before[starts][group] + count[group]

        ends = np.append(starts[1:], len(k)) - 1
        total = count + np.add.reduceat(complete, starts)
        self._remember(uniq, seen, pos, total, t[ends], s[ends], q[ends])

    def _carried(self, uniq: np.ndarray):
        """Where each key sits in the carried arrays, whether it was seen, and what was carried
        (zeros for a key not seen before)."""
        if not len(self._keys):
            zero = np.zeros(len(uniq), np.int64)
            return zero, zero.astype(bool), zero, zero, zero, zero
        pos = np.minimum(np.searchsorted(self._keys, uniq), len(self._keys) - 1)
        seen = self._keys[pos] == uniq
        return (pos, seen, *(np.where(seen, a[pos], 0)
                             for a in (self._count, self._last_ts, self._last_state, self._last_seq)))

    def _remember(self, uniq, seen, pos, total, last_ts, last_state, last_seq) -> None:
        p = pos[seen]
        self._count[p], self._last_ts[p] = total[seen], last_ts[seen]
        self._last_state[p], self._last_seq[p] = last_state[seen], last_seq[seen]
        fresh = ~seen
        if fresh.any():
            keys = np.concatenate([self._keys, uniq[fresh]])
            o = np.argsort(keys, kind="stable")
            self._keys = keys[o]
            self._count = np.concatenate([self._count, total[fresh]])[o]
            self._last_ts = np.concatenate([self._last_ts, last_ts[fresh]])[o]
            self._last_state = np.concatenate([self._last_state, last_state[fresh]])[o]
            self._last_seq = np.concatenate([self._last_seq, last_seq[fresh]])[o]
