"""The unified database reader (msprof_*.db, ascend_pytorch_profiler*.db, report_*.db).

A database built here by hand, with every expected canonical row written out from the rows
put in (not from the reader); the real databases of the ``real_data`` fixture checked against
counts taken from the files with plain SQL; damaged and renamed-schema files reported, not
crashed on.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.jobs.ingest import ingest
from pipeline.readers.exported.context import EXPORT_TABLES, ExportContext
from pipeline.readers.exported.db import pmu_metric, read_db, session_start_ns
from pipeline.readers.issues import IssueLog
from pipeline.warehouse.contracts import contract
from pipeline.warehouse.sink import to_table
from pipeline.warehouse.store import Warehouse

T0 = 1_700_000_000_000_000_000  # wall-clock ns
NONE = 4294967295
TID = (42 << 32) | 43  # globalTid of pid 42, thread 43

STRINGS = [
    "KERNEL_AICORE",
    "MatMul_1",
    "MatMul",
    "AI_CORE",
    '"16,32;32,8"',
    "FLOAT16;FLOAT16",
    "ND;ND",
    '"16,8"',
    "FLOAT16",
    "ND",
    "aic_mac_time",
    "aic_mac_ratio",
    "aic_total_time",
    "aic_l2_read_bw",
    "aclnnMatmul",
    "EVENT_RECORD",
    "aiv_total_time",
    "N/A",
    "dynamic",
    "Add_2",
    "Add",
    "AI_VECTOR_CORE",
    "rtKernelLaunch",
]
S = {s: i for i, s in enumerate(STRINGS)}

SCHEMA = {
    "STRING_IDS": "id INTEGER PRIMARY KEY, value TEXT",
    "META_DATA": "name TEXT, value TEXT",
    "SESSION_TIME_INFO": "startTimeNs INTEGER, endTimeNs INTEGER",
    "NPU_INFO": "id INTEGER, name TEXT",
    "ENUM_API_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "TASK": "startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER, "
    "globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, "
    "modelId INTEGER",
    "COMPUTE_TASK_INFO": "name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockDim INTEGER, mixBlockDim INTEGER, "
    "taskType INTEGER, opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER, "
    "inputShapes INTEGER, outputFormats INTEGER, outputDataTypes INTEGER, "
    "outputShapes INTEGER, attrInfo INTEGER, opState INTEGER",
    "TASK_PMU_INFO": "globalTaskId INTEGER, name INTEGER, value NUMERIC",
    "CANN_API": "startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER, connectionId INTEGER, "
    "name INTEGER",
    "STEP_TIME": "id INTEGER, startNs INTEGER, endNs INTEGER",
}
ROWS = {
    "STRING_IDS": list(enumerate(STRINGS)),
    "META_DATA": [("SCHEMA_VERSION", "1.2.0")],
    "SESSION_TIME_INFO": [(T0 - 1000, T0 + 10_000)],
    "NPU_INFO": [(3, "Ascend910B")],
    "ENUM_API_TYPE": [(20000, "acl"), (5000, "runtime")],
    "TASK": [  # startNs, endNs, deviceId, connectionId, globalTaskId, globalPid, taskType, contextId, streamId, taskId, modelId
        (T0 + 100, T0 + 200, 3, 7, 0, 42, S["KERNEL_AICORE"], NONE, 2, 10, NONE),
        (T0 + 300, T0 + 350, 3, 8, 1, 42, S["EVENT_RECORD"], NONE, 2, 11, NONE),
        (T0 + 400, T0 + 520, 3, 9, 2, 42, S["KERNEL_AICORE"], 5, 2, 12, 1),
    ],
    "COMPUTE_TASK_INFO": [
        (
            S["MatMul_1"],
            0,
            8,
            0,
            S["AI_CORE"],
            S["MatMul"],
            S["ND;ND"],
            S["FLOAT16;FLOAT16"],
            S['"16,32;32,8"'],
            S["ND"],
            S["FLOAT16"],
            S['"16,8"'],
            S["N/A"],
            S["dynamic"],
        ),
        (
            S["Add_2"],
            2,
            4,
            2,
            S["AI_VECTOR_CORE"],
            S["Add"],
            S["ND"],
            S["FLOAT16"],
            S["N/A"],
            S["ND"],
            S["FLOAT16"],
            S["N/A"],
            S["N/A"],
            S["N/A"],
        ),
    ],
    "TASK_PMU_INFO": [
        (0, S["aic_mac_time"], 50_000.0),  # ns, as msprof stores *_time
        (0, S["aic_mac_ratio"], 0.5),
        (0, S["aic_total_time"], 100_000),
        (0, S["aic_l2_read_bw"], 12.5),
        (2, S["aiv_total_time"], 120_500),
    ],
    "CANN_API": [
        (T0 + 50, T0 + 90, 20000, TID, 7, S["aclnnMatmul"]),
        (T0 + 60, T0 + 70, 5000, TID + 1, 8, S["rtKernelLaunch"]),
    ],
    "STEP_TIME": [(1, T0, T0 + 600)],
}


def build(path: Path, schema: dict | None = None, rows: dict | None = None) -> Path:
    schema = {**SCHEMA, **(schema or {})}
    rows = {**ROWS, **(rows or {})}
    con = sqlite3.connect(path)
    for table, cols in schema.items():
        if cols is None:
            continue
        con.execute(f"CREATE TABLE {table} ({cols})")
        data = rows.get(table, [])
        if data:
            con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(data[0]))})", data)
    con.commit()
    con.close()
    return path


class CollectSink:
    """Tables as the Parquet sink would type them (through the contracts), kept in memory."""

    def __init__(self):
        self.parts: dict[str, list[pa.Table]] = {}

    def write(self, table: str, columns: dict) -> None:
        self.parts.setdefault(table, []).append(to_table(contract("raw", table), columns))

    def rows(self, table: str) -> list[dict]:
        return pa.concat_tables(self.parts[table]).to_pylist() if table in self.parts else []


def run(path: Path, tables=EXPORT_TABLES, default_device=None):
    sink, log = CollectSink(), IssueLog()
    ctx = ExportContext(path.parent, sink, log, frozenset(tables), default_device)
    return read_db(path, ctx), sink, log


def given(rows: list[dict], **cols) -> list[dict]:
    """The rows' values of the named columns only."""
    return [{k: r[k] for k in cols} for r in rows]


def test_hand_built_database_to_canonical_rows(tmp_path):
    db = build(tmp_path / "msprof_20250101000000.db")
    res, sink, log = run(db)
    assert log.issues == []
    assert log.bytes_decoded == db.stat().st_size
    assert res.rows == {"task_runs": 3, "task_ops": 2, "task_metrics": 5, "api_calls": 2, "step_trace": 2}
    assert res.devices == {3, 64} and res.start_ns == T0 - 1000 and res.chip == "Ascend910B"

    src = "msprof_20250101000000.db"
    base = {
        "device_id": 3,
        "source_file": src,
        "batch_id": None,
        "task_type": None,
        "source": "db_task",
        "start_syscnt": None,
        "end_syscnt": None,
        "instance_no": None,
    }  # numbered by the ingest's sink
    assert sink.rows("task_runs") == [
        {
            **base,
            "seq": 1,
            "stream_id": 2,
            "task_id": 10,
            "start_ns": T0 + 100,
            "end_ns": T0 + 200,
            "task_type_name": "KERNEL_AICORE",
            "context_id": None,
            "model_id": NONE,
            "connection_id": 7,
        },
        {
            **base,
            "seq": 2,
            "stream_id": 2,
            "task_id": 11,
            "start_ns": T0 + 300,
            "end_ns": T0 + 350,
            "task_type_name": "EVENT_RECORD",
            "context_id": None,
            "model_id": NONE,
            "connection_id": 8,
        },
        {
            **base,
            "seq": 3,
            "stream_id": 2,
            "task_id": 12,
            "start_ns": T0 + 400,
            "end_ns": T0 + 520,
            "task_type_name": "KERNEL_AICORE",
            "context_id": 5,
            "model_id": 1,
            "connection_id": 9,
        },
    ]

    none = {
        "batch_id": None,
        "index_id": None,
        "ts_ns": None,
        "task_type_code": None,
        "tid": None,
        "wait_ns": None,  # this database has no waitNs
    }
    assert sink.rows("task_ops") == [
        {
            **none,
            "device_id": 3,
            "source_file": src,
            "seq": 1,
            "source": "export",
            "stream_id": 2,
            "task_id": 10,
            "model_id": NONE,
            "op_name": "MatMul_1",
            "op_type": "MatMul",
            "task_type": "AI_CORE",
            "block_dim": 8,
            "mix_block_dim": 0,
            "context_id": None,
            "op_state": "dynamic",
            "start_ns": T0 + 100,
            "input_shapes": "16,32;32,8",
            "input_data_types": "FLOAT16;FLOAT16",
            "input_formats": "ND;ND",
            "output_shapes": "16,8",
            "output_data_types": "FLOAT16",
            "output_formats": "ND",
            "accelerator_core": "AI_CORE",
        },
        {
            **none,
            "device_id": 3,
            "source_file": src,
            "seq": 3,
            "source": "export",
            "stream_id": 2,
            "task_id": 12,
            "model_id": 1,
            "op_name": "Add_2",
            "op_type": "Add",
            "task_type": "AI_VECTOR_CORE",
            "block_dim": 4,
            "mix_block_dim": 2,
            "context_id": 5,
            "op_state": None,
            "start_ns": T0 + 400,
            "input_shapes": None,
            "input_data_types": "FLOAT16",
            "input_formats": "ND",
            "output_shapes": None,
            "output_data_types": "FLOAT16",
            "output_formats": "ND",
            "accelerator_core": "AI_VECTOR_CORE",
        },
    ]

    first = {
        "device_id": 3,
        "source_file": src,
        "seq": 1,
        "stream_id": 2,
        "task_id": 10,
        "context_id": None,
        "start_ns": T0 + 100,
    }
    assert sink.rows("task_metrics") == [
        {**first, "metric": "aic_mac_time_us", "label": "aic_mac_time", "value": 50.0},
        {**first, "metric": "aic_mac_ratio", "label": "aic_mac_ratio", "value": 0.5},
        {**first, "metric": "aicore_time_us", "label": "aic_total_time", "value": 100.0},
        {**first, "metric": "aic_l2_read_bw_gbps", "label": "aic_l2_read_bw", "value": 12.5},
        {
            "device_id": 3,
            "source_file": src,
            "seq": 3,
            "stream_id": 2,
            "task_id": 12,
            "context_id": 5,
            "start_ns": T0 + 400,
            "metric": "aiv_time_us",
            "label": "aiv_total_time",
            "value": 120.5,
        },
    ]

    api = {
        "device_id": 64,
        "source_file": src,
        "stream_id": None,
        "ret_code": None,
        "data_size_bytes": None,
        "task_ids": None,
        "batch_ids": None,
        "type_code": None,
        "item": None,
        "record_kind": "db_cann_api",
    }
    assert sink.rows("api_calls") == [
        {
            **api,
            "seq": 0,
            "level": "acl",
            "api_name": "aclnnMatmul",
            "api_type": 20000,
            "pid": 42,
            "tid": 43,
            "start_ns": T0 + 50,
            "end_ns": T0 + 90,
            "connection_id": 7,
        },
        {
            **api,
            "seq": 1,
            "level": "runtime",
            "api_name": "rtKernelLaunch",
            "api_type": 5000,
            "pid": 42,
            "tid": 44,
            "start_ns": T0 + 60,
            "end_ns": T0 + 70,
            "connection_id": 8,
        },
    ]

    step = {
        "device_id": 3,
        "source_file": src,
        "model_id": None,
        "index_id": 1,
        "stream_id": None,
        "task_id": None,
        "timestamp_syscnt": None,
        "raw_tag_id": None,
    }
    assert sink.rows("step_trace") == [
        {**step, "seq": 0, "tag_id": 0, "ts_ns": T0},
        {**step, "seq": 1, "tag_id": 1, "ts_ns": T0 + 600},
    ]
    assert session_start_ns(db) == T0 - 1000


def test_only_the_tables_asked_for_are_written(tmp_path):
    res, sink, log = run(build(tmp_path / "msprof_0.db"), tables=("api_calls", "step_trace"))
    assert set(sink.parts) == {"api_calls", "step_trace"} and set(res.rows) == {"api_calls", "step_trace"}
    assert res.devices == {3, 64} and log.issues == []


@pytest.mark.parametrize(
    "name, expect",
    [
        ("aic_mac_time", ("aic_mac_time_us", 1e-3)),
        ("total_time", ("aicore_time_us", 1e-3)),
        ("aiv_total_time", ("aiv_time_us", 1e-3)),
        ("aiv_mte2_ratio", ("aiv_mte2_ratio", 1.0)),
        ("mac_ratio_extra", ("mac_ratio", 1.0)),
        ("aic_total_cycles", ("aic_total_cycles", 1.0)),
        ("aic_main_mem_read_bw", ("aic_main_mem_read_bw_gbps", 1.0)),
        ("read_main_memory_datas", ("read_main_memory_datas_kb", 1.0)),
        ("cube_utilization(%)", ("cube_utilization_pct", 1.0)),
        ("aic_icache_miss_rate", ("aic_icache_miss_rate", 1.0)),
    ],
)
def test_pmu_metric_names_state_their_unit(name, expect):
    assert pmu_metric(name) == expect


def test_older_and_newer_schema_variants(tmp_path):
    # report_*.db: the API table, block_dim; a newer msprof: blockNum beside a blockDim of another meaning
    old = build(
        tmp_path / "report_0.db",
        schema={
            "CANN_API": None,
            "API": SCHEMA["CANN_API"] + ", depth INTEGER",
            "COMPUTE_TASK_INFO": SCHEMA["COMPUTE_TASK_INFO"].replace("blockDim", "block_dim"),
            "META_DATA": None,
        },
        rows={"API": [r + (0,) for r in ROWS["CANN_API"]]},
    )
    res, sink, log = run(old)
    assert log.issues == [] and res.rows["api_calls"] == 2
    assert [r["block_dim"] for r in sink.rows("task_ops")] == [8, 4]

    new_cols = (
        SCHEMA["COMPUTE_TASK_INFO"].replace("blockDim", "blockNum").replace("mixBlockDim", "mixBlockNum")
    )
    new = build(
        tmp_path / "msprof_1.db",
        schema={"COMPUTE_TASK_INFO": new_cols + ", gridDim INTEGER, blockDim INTEGER"},
        rows={"COMPUTE_TASK_INFO": [r + (1, 999) for r in ROWS["COMPUTE_TASK_INFO"]]},
    )
    res, sink, log = run(new)
    assert log.issues == []
    assert [(r["block_dim"], r["mix_block_dim"]) for r in sink.rows("task_ops")] == [(8, 0), (4, 2)]


def test_renamed_column_is_named_and_the_other_tables_still_read(tmp_path):
    db = build(
        tmp_path / "msprof_0.db", schema={"TASK_PMU_INFO": "globalTaskId INTEGER, name INTEGER, val REAL"}
    )
    res, _sink, log = run(db)
    (issue,) = log.issues
    assert issue.kind == "unknown_schema"
    assert "TASK_PMU_INFO" in issue.message and "value" in issue.message and "1.2.0" in issue.message
    assert "task_metrics" not in res.rows
    assert res.rows == {"task_runs": 3, "task_ops": 2, "api_calls": 2, "step_trace": 2}
    assert log.bytes_decoded == db.stat().st_size

    db = build(tmp_path / "msprof_1.db", schema={"TASK": SCHEMA["TASK"].replace("startNs", "beginNs")})
    res, _sink, log = run(db)
    (issue,) = log.issues
    assert issue.kind == "unknown_schema" and "TASK" in issue.message and "startNs" in issue.message
    assert res.rows == {"api_calls": 2, "step_trace": 2}  # the step's device from NPU_INFO


def test_database_without_string_ids_reports_once(tmp_path):
    db = build(tmp_path / "msprof_0.db", schema={"STRING_IDS": None})
    res, sink, log = run(db)
    assert [i.kind for i in log.issues] == ["unknown_schema"] and "STRING_IDS" in log.issues[0].message
    assert res.rows["task_runs"] == 3 and {r["task_type_name"] for r in sink.rows("task_runs")} == {None}


@pytest.mark.parametrize("cut", ["page", "mid_page", "header", "empty"])
def test_truncated_database_is_reported_not_crashed_on(tmp_path, cut):
    whole = build(tmp_path / "whole.db")
    data = whole.read_bytes()
    keep = {"page": len(data) - 4096, "mid_page": len(data) // 2 + 100, "header": 60, "empty": 0}[cut]
    db = tmp_path / "msprof_0.db"
    db.write_bytes(data[:keep])
    res, sink, log = run(db)
    assert res is None and sink.parts == {}
    (issue,) = log.issues
    assert (issue.kind, issue.byte_length) == ("unreadable_file", keep)
    assert log.bytes_skipped() == keep and log.bytes_decoded == 0
    assert session_start_ns(db) is None


def test_garbage_and_damaged_pages_are_reported(tmp_path):
    db = tmp_path / "msprof_0.db"
    db.write_bytes(b"not a database at all, just text\n" * 200)
    res, _, log = run(db)
    assert res is None and [i.kind for i in log.issues] == ["unreadable_file"]
    assert "not a database" in log.issues[0].message

    data = bytearray(build(tmp_path / "whole.db").read_bytes())
    for page in range(1, len(data) // 4096):  # every page but the first (the schema) overwritten
        data[page * 4096 : (page + 1) * 4096] = b"\xa5" * 4096
    db.write_bytes(bytes(data))
    res, _sink, log = run(db)  # no exception
    kinds = [i.kind for i in log.issues]
    assert "unreadable_file" in kinds
    assert log.bytes_decoded == 0 and log.bytes_skipped() == len(data)


def test_damaged_table_keeps_the_tables_read_before_it(tmp_path):
    whole = build(tmp_path / "whole.db")
    con = sqlite3.connect(whole)
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'TASK_PMU_INFO'").fetchone()
    con.close()
    data = bytearray(whole.read_bytes())
    data[(root - 1) * 4096 : root * 4096] = b"\xa5" * 4096  # the table's only page
    db = tmp_path / "msprof_0.db"
    db.write_bytes(bytes(data))
    res, _sink, log = run(db)
    (issue,) = log.issues
    assert issue.kind == "unreadable_file" and "task_metrics" in issue.message
    assert issue.byte_length == len(data) and log.bytes_decoded == 0
    assert res.rows == {"task_runs": 3, "task_ops": 2}  # read before the damaged table
    assert any("damaged" in n for n in res.notes)


def test_journal_beside_the_database_is_reported(tmp_path):
    db = build(tmp_path / "msprof_0.db")
    (tmp_path / "msprof_0.db-journal").write_bytes(b"\0" * 512)
    res, _, log = run(db)
    assert res.rows["task_runs"] == 3
    (issue,) = log.issues
    assert issue.kind == "unfinished_write" and "may not have finished" in issue.message


def test_repeated_global_task_ids_pair_pmu_rows_in_time_order(tmp_path):
    # two executions of one static-graph task share globalTaskId 0; so do their PMU rows
    task = [(T0 + 900, T0 + 950, 3, 7, 0, 42, 0, NONE, 2, 10, NONE), ROWS["TASK"][0]]  # later one first
    pmu = [(0, S["aic_mac_ratio"], 0.25), (0, S["aic_mac_ratio"], 0.75)]
    _res, sink, _log = run(build(tmp_path / "msprof_0.db", rows={"TASK": task, "TASK_PMU_INFO": pmu}))
    assert given(sink.rows("task_metrics"), start_ns=1, value=1) == [
        {"start_ns": T0 + 900, "value": 0.75},
        {"start_ns": T0 + 100, "value": 0.25},
    ]
    assert len(sink.rows("task_ops")) == 2  # the description goes with both executions


# --- real databases ---------------------------------------------------------------------------
PT = "Ascend+msinsight/test/data/pytorch/db/level{}/rank0_ascend_pt"
PT_DB = PT + "/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"
FULL = "Ascend+msinsight/server/src/test/test_data/full_db/{}"
REAL = [
    PT_DB.format(0),
    PT_DB.format(1),
    PT_DB.format(2),
    FULL.format("msprof_0.db"),
    FULL.format("report_0.db"),
]


def _count(path: Path, sql: str) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:  # the table is not in this file
        return 0
    finally:
        con.close()


@pytest.mark.parametrize("rel", REAL)
def test_real_database_counts(real_data, rel):
    path = real_data / rel
    res, sink, log = run(path, default_device=0)
    assert log.issues == [] and log.bytes_decoded == path.stat().st_size
    api = "CANN_API" if "report_" not in rel else "API"
    expect = {
        "task_runs": _count(path, "SELECT count(*) FROM TASK"),
        "task_ops": _count(path, "SELECT count(*) FROM TASK t JOIN COMPUTE_TASK_INFO c USING (globalTaskId)")
        + _count(
            path, "SELECT count(*) FROM TASK t JOIN COMMUNICATION_SCHEDULE_TASK_INFO c USING (globalTaskId)"
        ),
        "task_metrics": _count(path, "SELECT count(*) FROM TASK t JOIN TASK_PMU_INFO p USING (globalTaskId)"),
        "api_calls": _count(path, f"SELECT count(*) FROM {api}"),
        "step_trace": 2 * _count(path, "SELECT count(*) FROM STEP_TIME"),
        "comm_ops": _count(path, "SELECT count(*) FROM COMMUNICATION_OP"),
        "comm_tasks": _count(
            path, "SELECT count(*) FROM TASK t JOIN COMMUNICATION_TASK_INFO c USING (globalTaskId)"
        ),
    }
    assert res.rows == {k: v for k, v in expect.items() if v}
    for table, n in res.rows.items():
        assert len(sink.rows(table)) == n
    assert (
        res.start_ns
        == _count(path, "SELECT min(startTimeNs) FROM SESSION_TIME_INFO")
        == session_start_ns(path)
    )
    assert res.chip == "Ascend910B"


def test_real_pytorch_level1_rows_checked_by_hand(real_data):
    res, sink, _log = run(real_data / PT_DB.format(1), default_device=0)
    assert res.rows == {
        "task_runs": 552,
        "task_ops": 187,
        "task_metrics": 5180,
        "api_calls": 710,
        "step_trace": 2,
        "comm_ops": 4,
        "comm_tasks": 296,  # 112 Notify_Record, 112 Notify_Wait, 36 Reduce_Inline, 36 Memcpy
    }
    assert res.devices == {0, 64} and res.start_ns == 1736410576284680000
    # TASK row 1: (1736410576375315901, 1736410576375315921, 0, 1646, 0, 3136493, 0 'PROFILING_ENABLE',
    #              4294967295, 0, 8, 4294967295, 0)
    r = sink.rows("task_runs")[0]
    assert (r["start_ns"], r["end_ns"], r["device_id"], r["stream_id"], r["task_id"]) == (
        1736410576375315901,
        1736410576375315921,
        0,
        0,
        8,
    )
    assert (r["task_type_name"], r["context_id"], r["model_id"], r["connection_id"]) == (
        "PROFILING_ENABLE",
        None,
        4294967295,
        1646,
    )
    # COMPUTE_TASK_INFO globalTaskId 3: name 4 'trans_TransData_0', blockDim 32, taskType 5 'AI_VECTOR_CORE',
    # opType 6 'TransData', inputShapes 10 '"32,3,224,224"', outputFormats 11 'NC1HWC0'; TASK stream 2 task 11063
    o = sink.rows("task_ops")[0]
    assert (o["op_name"], o["op_type"], o["task_type"], o["block_dim"], o["stream_id"], o["task_id"]) == (
        "trans_TransData_0",
        "TransData",
        "AI_VECTOR_CORE",
        32,
        2,
        11063,
    )
    assert (o["input_shapes"], o["output_formats"], o["start_ns"]) == (
        "32,3,224,224",
        "NC1HWC0",
        1736410576404465403,
    )
    # globalTaskId 261 = TASK rowid 550, stream 2 task 11278 at 1736410576535280797, 695,074 ns long:
    # aiv_total_time 691844.2013888889 (ns), aiv_total_cycles 59775339
    m = {x["metric"]: x["value"] for x in sink.rows("task_metrics") if x["seq"] == 550}
    assert {
        (x["stream_id"], x["task_id"], x["start_ns"]) for x in sink.rows("task_metrics") if x["seq"] == 550
    } == {(2, 11278, 1736410576535280797)}
    assert m["aiv_time_us"] == pytest.approx(691.8442013888889) and m["aiv_total_cycles"] == 59775339
    # CANN_API row 1: (…395215600, …395252400, 20000, 13471134862272974, 936, name 275)
    a = sink.rows("api_calls")[0]
    assert (a["level"], a["api_name"], a["pid"], a["tid"], a["connection_id"]) == (
        "acl",
        "aclrtMemcpyAsync",
        3136493,
        3140046,
        936,
    )
    # STEP_TIME: (50, 1736410576386409710, 1736410576538298460)
    assert given(sink.rows("step_trace"), index_id=1, tag_id=1, ts_ns=1) == [
        {"index_id": 50, "tag_id": 0, "ts_ns": 1736410576386409710},
        {"index_id": 50, "tag_id": 1, "ts_ns": 1736410576538298460},
    ]
    # COMMUNICATION_OP row 1: (opName 253 'hcom_allReduce__210_0_1', 1736410576431631806, 1736410576520382799, ...)
    c = sink.rows("comm_ops")[0]
    assert (c["device_id"], c["op_name"], c["start_ns"], c["end_ns"]) == (
        0,
        "hcom_allReduce__210_0_1",
        1736410576431631806,
        1736410576520382799,
    )


def test_real_torch_npu_export_ingests_with_every_byte_accounted_for(real_data, tmp_path):
    dump = real_data / PT.format(1)
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        result = ingest(dump, wh)
    row = result.row
    assert (row["layout_generation"], row["layout"], row["chip"], row["devices"]) == (
        4,
        "torch_npu_export",
        "Ascend910B",
        [0],
    )
    # the database, and analysis.db: torch_npu's step breakdown, read beside the step events
    size = sum(
        (dump / "ASCEND_PROFILER_OUTPUT" / name).stat().st_size
        for name in ("ascend_pytorch_profiler_0.db", "analysis.db")
    )
    assert row["data_bytes"] == size == row["bytes_decoded"] and row["bytes_skipped"] == 0
    assert {
        t: result.rows_by_table[t]
        for t in ("task_runs", "task_ops", "task_metrics", "api_calls", "step_trace")
    } == {"task_runs": 552, "task_ops": 187, "task_metrics": 5180, "api_calls": 710, "step_trace": 2}


def test_real_truncated_copy_is_reported(real_data, tmp_path):
    src = real_data / PT_DB.format(0)
    data = src.read_bytes()
    db = tmp_path / "ascend_pytorch_profiler_0.db"
    db.write_bytes(data[: len(data) // 3])
    res, sink, log = run(db)
    assert res is None and sink.parts == {}
    assert [(i.kind, i.byte_length) for i in log.issues] == [("unreadable_file", len(data) // 3)]
    shutil.copyfile(src, db)  # the whole file reads again
    assert run(db)[0].rows["task_runs"] == _count(src, "SELECT count(*) FROM TASK")
