"""What a synthetic dump contains, in plain values: the ground truth tests compare against.

Times are integer ns on the run timeline (host monotonic raw), before any encoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass

_SCALARS = (int, float, str, bool, type(None))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def plain(value):
    """`value` as JSON-ready plain values: dataclasses as dicts, tuples as lists.

    What `dataclasses.asdict` gives for these flat records, without its deep copy of every
    value, which took most of the time of writing the truth of a 65,000-task dump; scalars
    return at once and a dataclass's field names are looked up once per class, for the
    millions of values of such a truth."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    names = _FIELD_NAMES.get(kind)
    if names is None and is_dataclass(value) and not isinstance(value, type):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(value))
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


@dataclass
class DeviceTruth:
    device_id: int
    hwts_mhz: int
    aic_mhz: int
    ai_core_num: int
    host_mon_ns: int
    dev_cntvct: int
    pid: int


@dataclass
class ApiCall:
    device_id: int
    level: str  # acl | runtime
    name: str
    api_type: int | None  # AscendCL tag; None for runtime
    pid: int | None
    tid: int
    stream_id: int | None  # None: no stream (written as 65535)
    start_ns: int
    end_ns: int
    task_ids: list[int] = field(default_factory=list)


@dataclass
class TaskState:
    device_id: int
    stream_id: int
    task_id: int
    task_type: int
    state: int  # TIME_LINE state (memcpy mapped: receive 1, start 2, end 3)
    ts_ns: int
    kind: str  # time_line | ts_memcpy


@dataclass
class TaskInstance:
    device_id: int
    infer_id: int
    stream_id: int
    task_id: int
    task_type: int
    kind: str
    op_name: str | None
    waiting_ns: int | None
    pending_ns: int | None
    running_ns: int
    complete_ns: int | None  # None: COMPLETE was not written (the instance is dropped)


@dataclass
class Op:
    device_id: int
    stream_id: int
    task_id: int
    op_name: str
    op_type: str
    block_dim: int
    task_type: str


@dataclass
class Pmu:
    device_id: int
    stream_id: int
    task_id: int
    block_dim: int
    total_cycles: int
    counters: list[int]
    ts_ns: int


def training_marks(step: tuple[int, int]) -> list[tuple[int, int, int]]:
    """The step-trace records of a training iteration inside ``step`` (MODEL_START, MODEL_END),
    as (tag, stream, ns): FP 1 us after the start, BP 1 us before the end, and two all-reduce
    ranges that overlap, [+2, +4] us on stream 0 and [+3, +5] us on stream 1 (even tag starts,
    the next odd tag ends). Times stay multiples of 20 ns when the step's are."""
    start, end = step
    return [
        (2, 0, start + 1_000),
        (10000, 0, start + 2_000),
        (10002, 1, start + 3_000),
        (10001, 0, start + 4_000),
        (10003, 1, start + 5_000),
        (3, 0, end - 1_000),
    ]


@dataclass
class Inference:
    device_id: int
    infer_id: int
    model_id: int
    model_name: str
    input: tuple[int, int]
    infer: tuple[int, int]
    output: tuple[int, int]
    step: tuple[int, int] | None  # step-trace MODEL_START / MODEL_END, None when not written
    marks: list[tuple[int, int, int]] = field(default_factory=list)  # training records: (tag, stream, ns)


@dataclass
class Truth:
    layout: str
    metric_set: str
    event_ids: list[int]
    devices: list[DeviceTruth] = field(default_factory=list)
    api_calls: list[ApiCall] = field(default_factory=list)
    states: list[TaskState] = field(default_factory=list)
    instances: list[TaskInstance] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    pmu: list[Pmu] = field(default_factory=list)
    inferences: list[Inference] = field(default_factory=list)

    def as_dict(self) -> dict:
        return plain(self)
