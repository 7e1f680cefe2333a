"""Inputs that once ended in an internal error, a stray traceback or a loss bigger than needed
(issue 42): each is a counted issue in ingest_issues, the rest of the dump is read, and `profetl
run` in a process of its own exits 5 where data is lost, with nothing on stderr."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from pipeline.outputs.query import query
from pipeline.warehouse.store import Warehouse
from tests.helpers.warehouse_checks import profetl
from tests.readers.test_exported_csv import KERNEL_DETAILS
from tests.readers.test_exported_db import build as build_db

pytestmark = pytest.mark.slow


def _hiprof(small_dumps, d: Path) -> Path:
    shutil.copytree(small_dumps / "hiprof", d)
    return d


def _prof_device(small_dumps, d: Path) -> Path:
    shutil.copytree(small_dumps / "prof", d)
    return next(d.glob("PROF_*"))


def _torch_export(d: Path, info: str | None = None, kernel_details: bytes | None = None) -> Path:
    rank = d / "host_1_ascend_pt"
    (rank / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (rank / "profiler_info_5.json").write_text(info or json.dumps({"rank_id": 5}))
    (rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").write_bytes(
        kernel_details or KERNEL_DETAILS.encode()
    )
    return rank


def _db(d: Path, sql: str) -> Path:
    d.mkdir()
    con = sqlite3.connect(build_db(d / "msprof_0.db"))
    con.execute(sql)
    con.commit()
    con.close()
    return d


def self_link(small_dumps, d):
    d = _hiprof(small_dumps, d)
    f = next((d / "data").glob("aicore.data.*.slice_0"))
    f.unlink()
    os.symlink(f.name, f)
    return d


def device_2_32_in_a_file_name(small_dumps, d):
    d = _hiprof(small_dumps, d)
    for f in (d / "data").glob("aicore.data.0.slice_0*"):
        f.rename(f.with_name(f.name.replace(".0.", f".{2**32}.")))
    return d


def device_2_32_in_a_folder_name(small_dumps, d):
    prof = _prof_device(small_dumps, d)
    dev = next(prof.glob("device_*"))
    shutil.copytree(dev, prof / f"device_{2**32}")
    return prof


def rank_id_10_30(small_dumps, d):
    return _torch_export(d, json.dumps({"rank_id": 10**30}))


def collection_end_40_nines(small_dumps, d):
    return _torch_export(
        d,
        '{"rank_id": 5, "start_info": {"start_monotonic": 100}, '
        '"end_info": {"collectionTimeEnd": ' + "9" * 40 + ', "MonotonicTimeEnd": 200}}',
    )


def string_ids_not_utf8(small_dumps, d):
    # STRING_IDS id 1 is the op name MatMul_1
    return _db(d, "UPDATE STRING_IDS SET value = CAST(x'4d6174ff4d756c5f31' AS TEXT) WHERE id = 1")


def start_1e300(small_dumps, d):
    return _db(d, "UPDATE TASK SET startNs = 1e300 WHERE globalTaskId = 1")


def device_id_beyond_int32(small_dumps, d):
    return _db(d, f"UPDATE TASK SET deviceId = {2**40} WHERE globalTaskId = 2")


def kernel_details_row_not_utf8(small_dumps, d):
    # a ragged row (4 cells) whose text is not UTF-8, after the three good rows
    return _torch_export(d, kernel_details=KERNEL_DETAILS.encode() + b"1,2,3\xff\xfe,4\r\n")


def only_name_dictionaries(small_dumps, d):
    """Every data file gone but the name dictionaries (Framework.hash_dic), markers and all."""
    d = _hiprof(small_dumps, d)
    for f in (d / "data").iterdir():
        if not f.name.startswith("Framework.hash_dic"):
            f.unlink()
    return d


def all_data_files_empty(small_dumps, d):
    d = _hiprof(small_dumps, d)
    for f in (d / "data").iterdir():
        if f.name.endswith(".done"):
            f.unlink()
        else:
            f.write_bytes(b"")
    return d


# case -> (make the dump, exit code, issue kind, text in its message, [SQL, its one value])
CASES = {
    "slice linked to itself": (self_link, 5, "unreadable_file", "aicore.data.0.slice_0", None),
    "device 2^32 in a file name": (
        device_2_32_in_a_file_name,
        5,
        "unreadable_file",
        "does not fit 32 bits",
        None,
    ),
    "device 2^32 in a folder name": (
        device_2_32_in_a_folder_name,
        5,
        "unreadable_file",
        f"device_{2**32}",
        None,
    ),
    "rank_id 10^30": (rank_id_10_30, 5, "bad_metadata", "rank_id 1.000e+30", None),
    "collection end of 40 nines": (collection_end_40_nines, 5, "bad_metadata", "collectionTimeEnd", None),
    "STRING_IDS not UTF-8": (
        string_ids_not_utf8,
        0,
        "bad_value",
        "STRING_IDS",
        ("select count(*) from task_ops where op_name = 'Mat\ufffdMul_1'", 1),
    ),
    "1e300 in TASK.startNs": (start_1e300, 5, "bad_row", "task_runs", ("select count(*) from task_runs", 2)),
    "deviceId beyond int32": (
        device_id_beyond_int32,
        5,
        "bad_row",
        "task_ops",
        ("select count(*) from task_ops", 1),
    ),
    "kernel_details row not UTF-8": (
        kernel_details_row_not_utf8,
        5,
        "bad_text_line",
        "row (line 5) has 4 cells",
        ("select count(*) from task_runs", 2),
    ),
    "only name dictionaries": (
        only_name_dictionaries,
        5,
        "no_data",
        "give no record of any table",
        None,
    ),
    "all data files empty": (
        all_data_files_empty,
        5,
        "no_data",
        "every data file of the dump is empty",
        None,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_a_counted_issue_not_an_internal_error(small_dumps, tmp_path, case):
    make, code, kind, text, check = CASES[case]
    dump = make(small_dumps, tmp_path / "dump")
    wh = tmp_path / "wh"
    r = profetl("run", dump, "--warehouse", wh)
    assert "Traceback" not in r.stderr and "internal error" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert r.stderr == "", r.stderr
    assert r.returncode == code, r.stdout
    w = Warehouse(wh)
    found = query(w, f"select source_file || ': ' || message from ingest_issues where kind = '{kind}'").rows
    assert any(text in m for (m,) in found), (found, r.stdout)
    if check is not None:
        sql, value = check
        assert query(w, sql).rows == [(value,)], r.stdout
