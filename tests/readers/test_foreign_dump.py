"""A hiprof-era ``result_dir`` written by an independent generator gives the right tables.

Nothing here comes from profetl's own synth or from ``pipeline.layouts``: every record is
packed below with ``struct`` ('<' format strings) straight from the byte layouts of
docs/formats.md (#dir-result-dir, #control-files, #file-names, #clock-device, #acl-record,
#runtime-api-record, #ge-task-desc, #ge-model-time, #tlv, #info-json), and every expected
value is a literal worked out by hand from the rules stated in the headers of
sql/staging/*.sql and sql/marts/*.sql.

Scenario (device 0, Ascend310 "chip 0", one model run twice):

* Clocks, 2022 sync-file form (docs/formats.md#sync-logs): ``host_start.log.0`` has ``[Device0]``,
  ``clock_realtime`` then ``clock_monotonic_raw`` = H0 = 5_000_000_000_000 ns;
  ``dev_start.log.0`` has clock_realtime, clock_monotonic_raw (the device's own, unused) and
  ``cntvct`` = 3_000_000_000. hwts_frequency 50 MHz, so a device tick is 20 ns and
  ``t_ns = H0 + (syscnt - 3_000_000_000) * 1000 / 50``. Host records are already ns.
  All times below are written as offsets from H0 ("+140_000" means H0 + 140_000 ns).
* Host (legacy structs, docs/formats.md#acl-record and after): two ``aclmdlExecute`` calls (+100_000..+400_000 and
  +500_000..+812_345) plus one ``aclrtSynchronizeStream`` in a legacy-infer named
  ``AclModule.acl_rts.0.0``; eight ``Runtime.api`` calls (one on stream 65535 before the
  first inference); four GE task descriptions (op names as strings); two GE model_time
  records (one per inference).
* Device ``ts_track`` (legacy-infer names ``ts_track.data.1.0.0`` / ``.1``, cut in the middle
  of a record): STEP_TRACE MODEL_START/MODEL_END per inference and TIME_LINE states for:
    inference 1: task 1 conv1  WAITING, PENDING, RUNNING (+ states 7, 8), COMPLETE
                 task 2 relu1  no WAITING
                 task 3 add1   no PENDING
    inference 2: task 1 conv1  again (same task id -> Count 2 in task_scheduler)
                 task 4 nms    AI CPU task without RUNNING
                 task 3 add1   again, launched by a different runtime API
                 task 5        WAITING, RUNNING and never a COMPLETE (left out, counted)
* Device ``aicore.data.0.slice_0`` / ``slice_1`` (cut in the middle of a record):
  EVENT_COUNT records for the five AI Core instances plus one AI CPU (task type 1) record
  that must be ignored.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from pipeline.jobs.runner import ingest_dump
from pipeline.outputs.export import fetch
from pipeline.warehouse.store import Warehouse

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

# --------------------------------------------------------------------------- clocks

H0 = 5_000_000_000_000  # host_start.log.0 clock_monotonic_raw (ns)
CNTVCT = 3_000_000_000  # dev_start.log.0 cntvct (ticks)
HWTS_MHZ = 50  # DeviceInfo hwts_frequency: 1 tick = 1000 / 50 = 20 ns
PID, TID = 4321, 4322
MAGIC = 0x5A5A


def syscnt(rel_ns: int) -> int:
    """The device tick count that converts to H0 + rel_ns (docs/formats.md#clock-device)."""
    assert rel_ns % 20 == 0
    return CNTVCT + rel_ns * HWTS_MHZ // 1000


def host(rel_ns: int) -> int:
    return H0 + rel_ns


# --------------------------------------------------------------------------- record packers


def _packed(fmt: str, size: int, *values) -> bytes:
    assert struct.calcsize(fmt) == size, (fmt, struct.calcsize(fmt))
    return struct.pack(fmt, *values)


def acl_record(api_type: int, name: str, begin: int, end: int) -> bytes:
    """formats.md#acl-record: MsprofAclProfData, 128 bytes: magic, dataTag 0, apiType, begin, end, pid, tid, name[64], reserve[32]."""
    return _packed("<HHIQQII64s32x", 128, MAGIC, 0, api_type, begin, end, PID, TID, name.encode())


def runtime_api_record(name: str, entry: int, exit_: int, stream: int, tasks=()) -> bytes:
    """formats.md#runtime-api-record: MsprofRuntimeProfApiData, 256 bytes; taskId[10] as (task_id, batch_id) u16 pairs."""
    pairs = [v for task, batch in tasks for v in (task, batch)]
    pairs += [0] * (20 - len(pairs))
    return _packed(
        "<HHIQQQ64sIII20HH106x",
        256,
        MAGIC,
        40,
        TID,
        entry,
        exit_,
        0,
        name.encode(),
        0,
        stream,
        len(tasks),
        *pairs,
        0,
    )


def task_desc_record(
    op_name: str, op_type: str, ge_task_type: int, block_dim: int, stream: int, task: int, ts: int
) -> bytes:
    """formats.md#ge-task-desc: MsprofGeProfTaskData, 256 bytes; name and type as strings (flag byte 1)."""
    return _packed(
        "<HHIB7x120sB7x56sQQIIIIHHII12x",
        256,
        MAGIC,
        23,
        ge_task_type,
        1,
        op_name.encode(),
        1,
        op_type.encode(),
        0,
        ts,  # curIterNum, timeStamp
        0,
        block_dim,
        1,
        stream,  # shapeType static, blockDims, modelId, streamId
        task,
        0,
        TID,
        0,  # task_id, batch_id, threadId, contextId
    )


def model_time_record(
    request_id: int, in_s: int, in_e: int, inf_s: int, inf_e: int, out_s: int, out_e: int
) -> bytes:
    """formats.md#ge-model-time: MsprofGeProfInferData, 256 bytes; model name as a string (type byte 1)."""
    return _packed(
        "<HHIB7x120sII6Q64x",
        256,
        MAGIC,
        22,
        1,
        1,
        b"resnet50",
        request_id,
        TID,
        in_s,
        in_e,
        inf_s,
        inf_e,
        out_s,
        out_e,
    )


WAITING, RUNNING, COMPLETE, PENDING, AI_CORE_START, AI_CORE_DONE = 1, 2, 3, 4, 7, 8
AI_CORE_TASK, AI_CPU_TASK = 0, 1


def time_line(rel_ns: int, task_type: int, state: int, stream: int, task: int) -> tuple[int, bytes]:
    """formats.md#time-line: TIME_LINE (tag 3), 32 bytes: header (mode 1, tag, bufSize, reserved), then
    taskType, taskState, streamId, taskId, timestamp, thread, deviceId."""
    return rel_ns, _packed(
        "<BBHIHHHHQII", 32, 1, 3, 32, 0, task_type, state, stream, task, syscnt(rel_ns), 0, 0
    )


def step_trace(rel_ns: int, index_id: int, tag_id: int) -> tuple[int, bytes]:
    """formats.md#step-trace-record: STEP_TRACE (tag 10), 40 bytes: timestamp, indexId, modelId 1, stream 5, task 0, tagId."""
    return rel_ns, _packed("<BBHIQQQHHHH", 40, 1, 10, 40, 0, syscnt(rel_ns), index_id, 1, 5, 0, tag_id, 0)


def event_count(
    rel_ns: int, task_type: int, task: int, counters: list[int], task_cyc: int, block: int
) -> bytes:
    """formats.md#event-count: EVENT_COUNT (tag 4), 112 bytes: taskType, streamId 5, taskId, overflow 0 with an
    all-F overflowCycle, 8 counters (slots of sample.json's event list), task_cyc, timestamp, block."""
    assert len(counters) == 8
    return _packed(
        "<BBHIHHHHQ8QQQH3H",
        112,
        1,
        4,
        112,
        0,
        task_type,
        5,
        task,
        0,
        0xFFFF_FFFF_FFFF_FFFF,
        *counters,
        task_cyc,
        syscnt(rel_ns),
        block,
        0,
        0,
        0,
    )


# --------------------------------------------------------------------------- the dump


def write_dump(root: Path) -> None:
    data = root / "data"
    data.mkdir(parents=True)

    def put(name: str, content: bytes, done: bool = True) -> None:
        (data / name).write_bytes(content)
        if done:  # producer marker (docs/formats.md#markers); never data
            (data / f"{name}.done").write_text(f"filesize:{len(content)}\n")

    # ---- control files (formats.md#control-files, formats.md#info-json), each JSON on one line
    info = {
        "platform_version": "0",
        "devices": "0",
        "pid": str(PID),
        "pid_name": "infer_app",
        "hostname": "foreign-host",
        "memoryTotal": 16384,
        "netCard": [],
        "CPU": [{"Id": 0, "Name": "cpu", "Frequency": "", "Logical_CPU_Count": 8, "Type": "x86_64"}],
        "DeviceInfo": [
            {
                "id": 0,
                "hwts_frequency": str(HWTS_MHZ),
                "aic_frequency": "800",
                "aiv_frequency": "800",
                "ai_core_num": 4,
                "aiv_num": 0,
            }
        ],
    }
    (root / "info.json.0").write_text(json.dumps(info) + "\n")
    sample = {
        "devices": "0",
        "ai_core_profiling_mode": "task-based",
        "ai_core_metrics": "PipeUtilization",
        "ai_core_profiling_events": "0x8,0xa,0x9,0xb,0xc,0xd,0x54,0x55",
        "llc_profiling": "read",
    }
    (root / "sample.json").write_text(json.dumps(sample) + "\n")
    start = {
        "collectionDateBegin": "2023-11-14 22:13:20.000000",
        "collectionTimeBegin": "1700000000000000",
        "clockMonotonicRaw": str(H0 - 1_000_000),
    }
    (root / "start_info.0").write_text(json.dumps(start) + "\n")
    # 2022 sync-file form: clock_realtime first (a wrong positional read would take it as monotonic)
    (root / "host_start.log.0").write_text(
        "[Device0]\nclock_realtime: 1700000000999000000\nclock_monotonic_raw: 5000000000000\n"
    )
    (root / "dev_start.log.0").write_text(
        "clock_realtime: 1700000000999000500\nclock_monotonic_raw: 777000000000\ncntvct: 3000000000\n"
    )

    # ---- AscendCL (formats.md#acl-record): ACL_MODEL = 2, ACL_RTS = 3
    put(
        "AclModule.acl_model.0.slice_0",
        acl_record(2, "aclmdlExecute", host(100_000), host(400_000))
        + acl_record(2, "aclmdlExecute", host(500_000), host(812_345)),
    )
    put(
        "AclModule.acl_rts.0.0",  # legacy infer name ^AclModule\.(acl_rts)\.(\d+)\.\d+
        acl_record(3, "aclrtSynchronizeStream", host(358_000), host(369_000)),
        done=False,
    )

    # ---- Runtime API (formats.md#runtime-api-record)
    put(
        "Runtime.api.0.slice_0",
        b"".join(
            [
                runtime_api_record("rtCtxSetCurrent", host(50_000), host(60_000), 65535),  # R0 10_000
                runtime_api_record("rtKernelLaunch", host(140_000), host(142_000), 5, [(1, 0)]),  # R1  2_000
                runtime_api_record(
                    "rtKernelLaunch", host(150_000), host(153_000), 5, [(2, 0), (3, 0)]
                ),  # R2 3_000
                runtime_api_record("rtStreamSynchronize", host(360_000), host(368_000), 5),  # R3  8_000
                runtime_api_record("rtKernelLaunch", host(540_000), host(542_600), 5, [(1, 0)]),  # R4  2_600
                runtime_api_record(
                    "rtCpuKernelLaunch", host(550_000), host(551_000), 5, [(4, 0)]
                ),  # R5 1_000
                runtime_api_record(
                    "rtKernelLaunchWithFlag", host(562_000), host(563_500), 5, [(3, 0)]
                ),  # R6 1_500
                runtime_api_record("rtStreamSynchronize", host(760_000), host(766_000), 6),  # R7  6_000
            ]
        ),
    )

    # ---- GE task descriptions (formats.md#ge-task-desc), reported at model load; GE task types 0 AI_CORE, 1 AI_CPU
    put(
        "Framework.task_desc_info.0.slice_0",
        b"".join(
            [
                task_desc_record("conv1", "Conv2D", 0, 2, 5, 1, host(20_000)),
                task_desc_record("relu1", "Relu", 0, 1, 5, 2, host(21_000)),
                task_desc_record("add1", "Add", 0, 8, 5, 3, host(22_000)),
                task_desc_record("nms", "NonMaxSuppression", 1, 1, 5, 4, host(23_000)),
            ]
        ),
    )

    # ---- GE model time (formats.md#ge-model-time), one record per inference, in file order
    # (request id, input start/end, infer start/end, output start/end)
    put(
        "Framework.model_time_info_1_0.0.slice_0",
        b"".join(
            [
                model_time_record(0, *map(host, (110_000, 130_000, 130_000, 370_000, 370_000, 390_000))),
                model_time_record(1, *map(host, (510_000, 525_000, 525_000, 790_000, 790_000, 805_000))),
            ]
        ),
    )

    # ---- ts_track TLV (formats.md#tlv): all records in time order
    A, C = AI_CORE_TASK, AI_CPU_TASK
    ts_records = sorted(
        [
            step_trace(135_000, 1, 0),
            step_trace(350_000, 1, 1),  # inference 1: MODEL_START, MODEL_END
            step_trace(530_000, 2, 0),
            step_trace(780_000, 2, 1),  # inference 2
            # inference 1
            time_line(144_000, A, WAITING, 5, 1),
            time_line(146_000, A, PENDING, 5, 1),
            time_line(160_000, A, RUNNING, 5, 1),
            time_line(160_020, A, AI_CORE_START, 5, 1),
            time_line(189_980, A, AI_CORE_DONE, 5, 1),
            time_line(190_000, A, COMPLETE, 5, 1),
            time_line(155_000, A, PENDING, 5, 2),
            time_line(195_000, A, RUNNING, 5, 2),
            time_line(215_000, A, COMPLETE, 5, 2),
            time_line(156_000, A, WAITING, 5, 3),
            time_line(220_000, A, RUNNING, 5, 3),
            time_line(232_000, A, COMPLETE, 5, 3),
            # inference 2
            time_line(545_000, A, WAITING, 5, 1),
            time_line(548_000, A, PENDING, 5, 1),
            time_line(560_000, A, RUNNING, 5, 1),
            time_line(600_000, A, COMPLETE, 5, 1),
            time_line(552_000, C, WAITING, 5, 4),
            time_line(610_000, C, PENDING, 5, 4),
            time_line(650_000, C, COMPLETE, 5, 4),
            time_line(565_000, A, WAITING, 5, 3),
            time_line(570_000, A, PENDING, 5, 3),
            time_line(620_000, A, RUNNING, 5, 3),
            time_line(628_000, A, COMPLETE, 5, 3),
            time_line(700_000, A, WAITING, 5, 5),
            time_line(720_000, A, RUNNING, 5, 5),  # never completes
        ],
        key=lambda r: r[0],
    )
    ts = b"".join(rec for _, rec in ts_records)
    cut = sum(len(rec) for _, rec in ts_records[:6]) + 13  # 13 bytes into the 7th record
    # legacy infer names ts_track\.data\.\d+\.(\d+)\.\d+ (formats.md#file-names); no .done markers in that era
    put("ts_track.data.1.0.0", ts[:cut], done=False)
    put("ts_track.data.1.0.1", ts[cut:], done=False)

    # ---- aicore.data EVENT_COUNT (formats.md#event-count); slots: vec mac scalar mte1 mte2 mte3 icache_req icache_miss
    aic = b"".join(
        [
            event_count(190_000, A, 1, [12_000, 24_000, 6_000, 3_000, 9_600, 4_800, 1_000, 50], 48_000, 2),
            event_count(215_000, A, 2, [8_000, 0, 4_000, 0, 2_000, 1_000, 0, 0], 16_000, 1),
            event_count(232_000, A, 3, [0, 0, 16_000, 0, 32_000, 8_000, 400, 100], 64_000, 8),
            event_count(600_000, A, 1, [16_000, 40_000, 8_000, 4_000, 16_000, 6_400, 2_000, 30], 64_000, 2),
            event_count(628_000, A, 3, [3_000, 0, 7_500, 1_500, 6_000, 3_000, 300, 3], 30_000, 5),
            event_count(
                650_000, C, 4, [1, 2, 3, 4, 5, 6, 7, 8], 9_999, 1
            ),  # AI CPU: not an AI Core metric row
        ]
    )
    cut = 2 * 112 + 50  # 50 bytes into the third record
    put("aicore.data.0.slice_0", aic[:cut])
    put("aicore.data.0.slice_1", aic[cut:])


# --------------------------------------------------------------------------- expected tables
# Absolute times are H0 + offset; H0 = 5_000_000_000_000.

# Runtime API: durations R0 10_000, R1 2_000, R2 3_000, R3 8_000, R4 2_600, R5 1_000,
# R6 1_500, R7 6_000; device total = 34_100 ns. One row per (API, stream), stream 65535 -> NULL,
# sorted by time desc; avg exact (not integer division).
RUNTIME_API_SUMMARY = [
    # 100 * 10_000 / 34_100
    dict(
        device_id=0,
        api_name="rtCtxSetCurrent",
        stream_id=None,
        time_pct=29.325513196480937,
        time_ns=10_000,
        calls=1,
        avg_ns=10_000.0,
        min_ns=10_000,
        max_ns=10_000,
    ),
    # 100 * 8_000 / 34_100
    dict(
        device_id=0,
        api_name="rtStreamSynchronize",
        stream_id=5,
        time_pct=23.46041055718475,
        time_ns=8_000,
        calls=1,
        avg_ns=8_000.0,
        min_ns=8_000,
        max_ns=8_000,
    ),
    # 2_000 + 3_000 + 2_600 = 7_600; 100 * 7_600 / 34_100; avg 7_600 / 3
    dict(
        device_id=0,
        api_name="rtKernelLaunch",
        stream_id=5,
        time_pct=22.287390029325515,
        time_ns=7_600,
        calls=3,
        avg_ns=2533.3333333333335,
        min_ns=2_000,
        max_ns=3_000,
    ),
    # 100 * 6_000 / 34_100
    dict(
        device_id=0,
        api_name="rtStreamSynchronize",
        stream_id=6,
        time_pct=17.59530791788856,
        time_ns=6_000,
        calls=1,
        avg_ns=6_000.0,
        min_ns=6_000,
        max_ns=6_000,
    ),
    # 100 * 1_500 / 34_100
    dict(
        device_id=0,
        api_name="rtKernelLaunchWithFlag",
        stream_id=5,
        time_pct=4.39882697947214,
        time_ns=1_500,
        calls=1,
        avg_ns=1_500.0,
        min_ns=1_500,
        max_ns=1_500,
    ),
    # 100 * 1_000 / 34_100
    dict(
        device_id=0,
        api_name="rtCpuKernelLaunch",
        stream_id=5,
        time_pct=2.932551319648094,
        time_ns=1_000,
        calls=1,
        avg_ns=1_000.0,
        min_ns=1_000,
        max_ns=1_000,
    ),
]

# Task instances (offsets in ns; start = RUNNING, else PENDING, else WAITING):
#   T1  task1  W144k P146k R160k C190k: run 30k, wait 160-144=16k, pend 190-146=44k, dur 30k
#   T2  task2  P155k R195k C215k:       run 20k, wait 0,           pend 215-155=60k, dur 20k
#   T3  task3  W156k R220k C232k:       run 12k, wait 220-156=64k, pend 0,           dur 12k
#   T1' task1  W545k P548k R560k C600k: run 40k, wait 560-545=15k, pend 600-548=52k, dur 40k
#   T4  task4  W552k P610k C650k (AI CPU, no RUNNING):
#              run 0, wait = C - W = 650-552 = 98k, pend 650-610 = 40k, dur = C - P = 40k
#   T3' task3  W565k P570k R620k C628k: run 8k,  wait 620-565=55k, pend 628-570=58k, dur 8k
#   T5  task5  never completes: not in the table.
# API: the call listing (stream, task) that started last before the instance start:
#   T1 -> R1, T1' -> R4 (both rtKernelLaunch); T2, T3 -> R2 (rtKernelLaunch);
#   T3' -> R6 (rtKernelLaunchWithFlag); T4 -> R5 (rtCpuKernelLaunch).
# Total running = 70k + 20k + 12k + 8k + 0 = 110_000 ns.
TASK_SCHEDULER = [
    # T1 + T1': running 30k + 40k; 100 * 70_000 / 110_000
    dict(
        device_id=0,
        time_pct=63.63636363636363,
        time_ns=70_000,
        task_count=2,
        avg_ns=35_000.0,
        min_ns=30_000,
        max_ns=40_000,
        waiting_ns=31_000,
        running_ns=70_000,
        pending_ns=96_000,
        task_type="kernel AI core task",
        api_name="rtKernelLaunch",
        task_id=1,
        op_name="conv1",
        stream_id=5,
    ),
    # 100 * 20_000 / 110_000
    dict(
        device_id=0,
        time_pct=18.181818181818183,
        time_ns=20_000,
        task_count=1,
        avg_ns=20_000.0,
        min_ns=20_000,
        max_ns=20_000,
        waiting_ns=0,
        running_ns=20_000,
        pending_ns=60_000,
        task_type="kernel AI core task",
        api_name="rtKernelLaunch",
        task_id=2,
        op_name="relu1",
        stream_id=5,
    ),
    # 100 * 12_000 / 110_000
    dict(
        device_id=0,
        time_pct=10.909090909090908,
        time_ns=12_000,
        task_count=1,
        avg_ns=12_000.0,
        min_ns=12_000,
        max_ns=12_000,
        waiting_ns=64_000,
        running_ns=12_000,
        pending_ns=0,
        task_type="kernel AI core task",
        api_name="rtKernelLaunch",
        task_id=3,
        op_name="add1",
        stream_id=5,
    ),
    # 100 * 8_000 / 110_000
    dict(
        device_id=0,
        time_pct=7.2727272727272725,
        time_ns=8_000,
        task_count=1,
        avg_ns=8_000.0,
        min_ns=8_000,
        max_ns=8_000,
        waiting_ns=55_000,
        running_ns=8_000,
        pending_ns=58_000,
        task_type="kernel AI core task",
        api_name="rtKernelLaunchWithFlag",
        task_id=3,
        op_name="add1",
        stream_id=5,
    ),
    # no RUNNING: 0 running time, duration complete - pending
    dict(
        device_id=0,
        time_pct=0.0,
        time_ns=0,
        task_count=1,
        avg_ns=40_000.0,
        min_ns=40_000,
        max_ns=40_000,
        waiting_ns=98_000,
        running_ns=0,
        pending_ns=40_000,
        task_type="kernel AI cpu task",
        api_name="rtCpuKernelLaunch",
        task_id=4,
        op_name="nms",
        stream_id=5,
    ),
]

_NO_BW = dict(
    ub_read_bw_gbps=None,
    ub_write_bw_gbps=None,
    l1_read_bw_gbps=None,
    l1_write_bw_gbps=None,
    l2_read_bw_gbps=None,
    l2_write_bw_gbps=None,
    main_mem_read_bw_gbps=None,
    main_mem_write_bw_gbps=None,
)  # no memory event programmed in PipeUtilization

# aicore_time = cycles / 800 MHz / block * ceil(block / 4); ratio = counter / cycles;
# <pipe>_time = ratio * aicore_time; icache = miss / req; memory_bound = mte2 / max(mac, vec).
AI_CORE_METRICS = [  # seq: the record's index in aicore.data (file order)
    # 48_000/800 = 60 us / 2 * ceil(2/4)=1 -> 30; ratios 12k/48k .25, 24k/48k .5, 6k/48k .125,
    # 3k/48k .0625, 9.6k/48k .2, 4.8k/48k .1; icache 50/1000; bound .2/.5
    dict(
        device_id=0,
        task_id=1,
        stream_id=5,
        op_name="conv1",
        ts_ns=5_000_000_190_000,
        block_dim=2,
        seq=0,
        aicore_time_us=30.0,
        total_cycles=48_000,
        vec_time_us=7.5,
        vec_ratio=0.25,
        mac_time_us=15.0,
        mac_ratio=0.5,
        scalar_time_us=3.75,
        scalar_ratio=0.125,
        mte1_time_us=1.875,
        mte1_ratio=0.0625,
        mte2_time_us=6.0,
        mte2_ratio=0.2,
        mte3_time_us=3.0,
        mte3_ratio=0.1,
        icache_miss_rate=0.05,
        memory_bound=0.4,
        **_NO_BW,
    ),
    # 16_000/800 = 20 / 1 * 1 -> 20; ratios .5, 0, .25, 0, .125, .0625; no icache requests -> NULL;
    # bound .125/.5
    dict(
        device_id=0,
        task_id=2,
        stream_id=5,
        op_name="relu1",
        ts_ns=5_000_000_215_000,
        block_dim=1,
        seq=1,
        aicore_time_us=20.0,
        total_cycles=16_000,
        vec_time_us=10.0,
        vec_ratio=0.5,
        mac_time_us=0.0,
        mac_ratio=0.0,
        scalar_time_us=5.0,
        scalar_ratio=0.25,
        mte1_time_us=0.0,
        mte1_ratio=0.0,
        mte2_time_us=2.5,
        mte2_ratio=0.125,
        mte3_time_us=1.25,
        mte3_ratio=0.0625,
        icache_miss_rate=None,
        memory_bound=0.25,
        **_NO_BW,
    ),
    # 64_000/800 = 80 / 8 * ceil(8/4)=2 -> 20; ratios 0, 0, .25, 0, .5, .125; icache 100/400;
    # mac and vec both 0 -> memory_bound NULL
    dict(
        device_id=0,
        task_id=3,
        stream_id=5,
        op_name="add1",
        ts_ns=5_000_000_232_000,
        block_dim=8,
        seq=2,
        aicore_time_us=20.0,
        total_cycles=64_000,
        vec_time_us=0.0,
        vec_ratio=0.0,
        mac_time_us=0.0,
        mac_ratio=0.0,
        scalar_time_us=5.0,
        scalar_ratio=0.25,
        mte1_time_us=0.0,
        mte1_ratio=0.0,
        mte2_time_us=10.0,
        mte2_ratio=0.5,
        mte3_time_us=2.5,
        mte3_ratio=0.125,
        icache_miss_rate=0.25,
        memory_bound=None,
        **_NO_BW,
    ),
    # 64_000/800 = 80 / 2 * 1 -> 40; ratios .25, .625, .125, .0625, .25, .1; icache 30/2000;
    # bound .25/.625
    dict(
        device_id=0,
        task_id=1,
        stream_id=5,
        op_name="conv1",
        ts_ns=5_000_000_600_000,
        block_dim=2,
        seq=3,
        aicore_time_us=40.0,
        total_cycles=64_000,
        vec_time_us=10.0,
        vec_ratio=0.25,
        mac_time_us=25.0,
        mac_ratio=0.625,
        scalar_time_us=5.0,
        scalar_ratio=0.125,
        mte1_time_us=2.5,
        mte1_ratio=0.0625,
        mte2_time_us=10.0,
        mte2_ratio=0.25,
        mte3_time_us=4.0,
        mte3_ratio=0.1,
        icache_miss_rate=0.015,
        memory_bound=0.4,
        **_NO_BW,
    ),
    # block 5 from the EVENT_COUNT record (the GE description said 8): 30_000/800 = 37.5 / 5
    # * ceil(5/4)=2 -> 15; ratios .1, 0, .25, .05, .2, .1; icache 3/300; bound .2/.1
    dict(
        device_id=0,
        task_id=3,
        stream_id=5,
        op_name="add1",
        ts_ns=5_000_000_628_000,
        block_dim=5,
        seq=4,
        aicore_time_us=15.0,
        total_cycles=30_000,
        vec_time_us=1.5,
        vec_ratio=0.1,
        mac_time_us=0.0,
        mac_ratio=0.0,
        scalar_time_us=3.75,
        scalar_ratio=0.25,
        mte1_time_us=0.75,
        mte1_ratio=0.05,
        mte2_time_us=3.0,
        mte2_ratio=0.2,
        mte3_time_us=1.5,
        mte3_ratio=0.1,
        icache_miss_rate=0.01,
        memory_bound=2.0,
        **_NO_BW,
    ),
]

# One row per call, by start time; Duration = (end - begin) / 1000 us.
ACL_API = [
    # 400_000 - 100_000 = 300_000 ns
    dict(
        device_id=0,
        api_name="aclmdlExecute",
        api_type="ACL_MODEL",
        start_ns=5_000_000_100_000,
        dur_us=300.0,
        pid=PID,
        tid=TID,
    ),
    # 369_000 - 358_000 = 11_000 ns
    dict(
        device_id=0,
        api_name="aclrtSynchronizeStream",
        api_type="ACL_RTS",
        start_ns=5_000_000_358_000,
        dur_us=11.0,
        pid=PID,
        tid=TID,
    ),
    # 812_345 - 500_000 = 312_345 ns
    dict(
        device_id=0,
        api_name="aclmdlExecute",
        api_type="ACL_MODEL",
        start_ns=5_000_000_500_000,
        dur_us=312.345,
        pid=PID,
        tid=TID,
    ),
]

# Windows = the k-th aclmdlExecute: [+100_000, +400_000] and [+500_000, +812_345].
# Iterations (step trace): 1 = [+135_000, +350_000], 2 = [+530_000, +780_000]; an instance
# belongs to the first iteration ending at or after its COMPLETE.
TOPDOWN_INFERENCE = [
    dict(
        device_id=0,
        infer_id=1,
        module_name="ACL",
        api_name="aclmdlExecute",
        start_ns=5_000_000_100_000,
        dur_ns=300_000,
    ),
    dict(
        device_id=0, infer_id=1, module_name="GE", api_name="Input", start_ns=5_000_000_110_000, dur_ns=20_000
    ),  # 130k - 110k
    dict(
        device_id=0,
        infer_id=1,
        module_name="GE",
        api_name="Infer",
        start_ns=5_000_000_130_000,
        dur_ns=240_000,
    ),  # 370k - 130k
    dict(
        device_id=0,
        infer_id=1,
        module_name="GE",
        api_name="Output",
        start_ns=5_000_000_370_000,
        dur_ns=20_000,
    ),  # 390k - 370k
    # the kernel launches R1, R2 start inside the window (R0 does not start inside it, R3 is
    # rtStreamSynchronize, not a launch): 153k - 140k
    dict(
        device_id=0,
        infer_id=1,
        module_name="Runtime",
        api_name=None,
        start_ns=5_000_000_140_000,
        dur_ns=13_000,
    ),
    # T1 (R160k), T2 (R195k), T3 (R220k, C232k): 232k - 160k
    dict(
        device_id=0,
        infer_id=1,
        module_name="Task Scheduler",
        api_name=None,
        start_ns=5_000_000_160_000,
        dur_ns=72_000,
    ),
    dict(
        device_id=0,
        infer_id=2,
        module_name="ACL",
        api_name="aclmdlExecute",
        start_ns=5_000_000_500_000,
        dur_ns=312_345,
    ),
    dict(
        device_id=0, infer_id=2, module_name="GE", api_name="Input", start_ns=5_000_000_510_000, dur_ns=15_000
    ),  # 525k - 510k
    dict(
        device_id=0,
        infer_id=2,
        module_name="GE",
        api_name="Infer",
        start_ns=5_000_000_525_000,
        dur_ns=265_000,
    ),  # 790k - 525k
    dict(
        device_id=0,
        infer_id=2,
        module_name="GE",
        api_name="Output",
        start_ns=5_000_000_790_000,
        dur_ns=15_000,
    ),  # 805k - 790k
    # launches R4, R5 (rtCpuKernelLaunch), R6 (rtKernelLaunchWithFlag); R7 synchronizes: 563.5k - 540k
    dict(
        device_id=0,
        infer_id=2,
        module_name="Runtime",
        api_name=None,
        start_ns=5_000_000_540_000,
        dur_ns=23_500,
    ),
    # T1' (R560k), T4 (P610k, C650k), T3' (R620k, C628k): last COMPLETE 650k - 560k
    # (msprof's "last-starting task's end" would give 628k - 560k)
    dict(
        device_id=0,
        infer_id=2,
        module_name="Task Scheduler",
        api_name=None,
        start_ns=5_000_000_560_000,
        dur_ns=90_000,
    ),
]


# --------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("foreign")
    dump = base / "result_dir"
    write_dump(dump)
    wh = Warehouse(base / "wh")
    with wh.writer():
        outcome = ingest_dump(wh, dump)

    def rows(table: str) -> list[dict]:
        _, t = fetch(wh, table, [outcome.run_id])
        return t.to_pylist()

    return outcome, rows


def _compare(actual: list[dict], expected: list[dict]) -> None:
    assert len(actual) == len(expected), f"{len(actual)} rows, expected {len(expected)}:\n{actual}"
    for i, (got, want) in enumerate(zip(actual, expected)):
        assert set(got) - {"run_id"} == set(want), f"row {i} columns"
        for col, w in want.items():
            g = got[col]
            if isinstance(w, float):
                assert g == pytest.approx(w, rel=1e-9, abs=1e-12), f"row {i} {col}: got {g!r}, expected {w!r}"
            else:
                assert g == w, f"row {i} {col}: got {g!r}, expected {w!r}"


def test_dump_is_read_cleanly(run):
    outcome, rows = run
    assert outcome.status == "built"
    # legacy-infer names, .done markers and records cut across slices raise no ingest issue
    assert rows("ingest_issues") == []
    (dev,) = rows("devices")
    assert (dev["hwts_freq_mhz"], dev["host_mon_ns"], dev["dev_cntvct"]) == (50.0, H0, CNTVCT)


def test_runtime_api_summary(run):
    _compare(run[1]("runtime_api_summary"), RUNTIME_API_SUMMARY)


def test_task_scheduler(run):
    _compare(run[1]("task_scheduler"), TASK_SCHEDULER)


def test_ai_core_metrics(run):
    _compare(run[1]("ai_core_metrics"), AI_CORE_METRICS)


def test_acl_api(run):
    _compare(run[1]("acl_api"), ACL_API)


def test_topdown_inference(run):
    _compare(run[1]("topdown_inference"), TOPDOWN_INFERENCE)


def test_build_issues_count_the_incomplete_task(run):
    # T5 (WAITING, RUNNING, no COMPLETE) is the only loss; every PMU row has an op and blocks.
    issues = [(r["device_id"], r["kind"], r["count"]) for r in run[1]("build_issues")]
    assert issues == [(0, "dropped_task_instances", 1)]


def test_raw_tables_saw_every_record(run):
    # Both halves of the cut ts_track and aicore streams were read, record for record.
    rows = run[1]
    states = rows("task_states")
    assert len(states) == 25  # TIME_LINE records written above
    assert sorted({r["source_file"] for r in states}) == [
        "data/ts_track.data.1.0.0",
        "data/ts_track.data.1.0.1",
    ]
    assert len(rows("step_trace")) == 4
    assert len(rows("pmu_counters")) == 6
    assert len(rows("api_calls")) == 3 + 8  # ACL + runtime
