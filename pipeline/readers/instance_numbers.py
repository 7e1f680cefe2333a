"""Task Scheduler instance numbers counted while reading, so the build need not sort every state.

msprof's TIME_LINE state machine (docs/formats.md#rule-task-states) sorts the states of one
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

``RunNumbers.add`` does the same for ``task_runs``: an execution's number is the executions
of its (device, stream, task) before it in (end, seq) order, which is how the HWTS / STARS
logs are paired and written (by end time).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

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


def _ints(columns: dict, name: str, rows: np.ndarray) -> np.ndarray:
    """An id column of the rows; NULL (an exported row without the id) reads as -1, which no
    packed key takes, so its device is left to the build."""
    values = columns[name]
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.fill_null(-1)
    return np.asarray(values)[rows].astype(np.int64)


def _times(values, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(times, has a time) of the rows: an Arrow column is NULL where the device has no clock."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return np.asarray(values.fill_null(0))[rows].astype(np.int64), ~np.asarray(values.is_null())[rows]
    return np.asarray(values)[rows].astype(np.int64), np.ones(len(rows), bool)


@dataclass
class _States:
    """The state-machine rows of one batch, as int64 arrays."""

    rows: np.ndarray  # positions in the batch
    device: np.ndarray
    memcpy: np.ndarray  # 1 for a TS memcpy record, 0 for TIME_LINE
    stream: np.ndarray
    task: np.ndarray
    ts: np.ndarray
    has_ts: np.ndarray
    state: np.ndarray
    seq: np.ndarray

    @classmethod
    def of(cls, columns: dict, rows: np.ndarray) -> _States:
        kind = columns["record_kind"]
        if isinstance(kind, str):
            memcpy = np.full(len(rows), int(kind == "ts_memcpy"), np.int64)
        else:
            memcpy = (np.asarray(kind, dtype=object)[rows] == "ts_memcpy").astype(np.int64)
        ts, has_ts = _times(columns["ts_ns"], rows)
        return cls(
            rows,
            _ints(columns, "device_id", rows),
            memcpy,
            _ints(columns, "stream_id", rows),
            _ints(columns, "task_id", rows),
            ts,
            has_ts,
            _ints(columns, "task_state", rows),
            _ints(columns, "seq", rows),
        )

    @classmethod
    def of_runs(cls, columns: dict, rows: np.ndarray) -> _States:
        """Executions as states that each close an instance: ordered by (end, seq), every
        one counted."""
        end, has_end = _times(columns["end_ns"], rows)
        zero = np.zeros(len(rows), np.int64)
        return cls(
            rows,
            _ints(columns, "device_id", rows),
            zero,
            _ints(columns, "stream_id", rows),
            _ints(columns, "task_id", rows),
            end,
            has_end,
            zero + COMPLETE,
            _ints(columns, "seq", rows),
        )

    def countable(self) -> np.ndarray:
        """Rows with a time whose ids fit the packed key."""
        return (
            self.has_ts
            & (self.device >= 0)
            & (self.device < 1 << _DEVICE_BITS)
            & (self.stream >= 0)
            & (self.stream < 1 << _STREAM_BITS)
            & (self.task >= 0)
            & (self.task < 1 << _TASK_BITS)
        )

    def take(self, mask: np.ndarray) -> _States:
        return _States(*(getattr(self, f.name)[mask] for f in fields(self)))

    def key(self) -> np.ndarray:
        return (((self.device << 1 | self.memcpy) << _STREAM_BITS | self.stream) << _TASK_BITS) | self.task


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

    def _states(self, columns: dict, rows: np.ndarray) -> _States:
        return _States.of(columns, rows)

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
        st = self._states(columns, rows)
        self.given_up.update(np.unique(st.device[~st.countable()]).tolist())
        if self.given_up:
            st = st.take(~np.isin(st.device, list(self.given_up)))
        if not len(st.rows):
            return
        rows, key, ts, state, seq = st.rows, st.key(), st.ts, st.state, st.seq

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
        return (
            pos,
            seen,
            *(
                np.where(seen, a[pos], 0)
                for a in (self._count, self._last_ts, self._last_state, self._last_seq)
            ),
        )

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


class RunNumbers(InstanceNumbers):
    """Per-task execution counts of one ingest's ``task_runs``, carried from batch to batch."""

    def _machine_rows(self, columns: dict, n: int) -> np.ndarray:
        return np.arange(n)

    def _states(self, columns: dict, rows: np.ndarray) -> _States:
        return _States.of_runs(columns, rows)
