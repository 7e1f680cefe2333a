"""Exported files still being written: read as the ingest measured them when it scanned the dump.

Each test grows a file after the scan, just before its reader opens it (a hook on the reader's
dispatch), and checks the rows against the rows written before the growth, counted by hand,
and the bytes against the file sizes: text files are read up to the measured size and the
rest is reported (``grown_while_read``); a database that changed is not read at all
(``changed_while_read``, its bytes skipped), one that changes after its copy was taken is read
as copied (docs/formats.md#live-dumps).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from pipeline.jobs.ingest import ingest
from pipeline.readers.exported import db as export_db
from pipeline.readers.exported import reader as export_reader
from pipeline.warehouse.store import Warehouse
from tests.readers.test_exported_db import ROWS, build

CSV_HEADER = "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n"


def csv_rows(first: int, n: int) -> str:
    return "".join(f"1,0,{i},2,op_{i},Add,AI_CORE,{1000 + i}.5,1.25\n" for i in range(first, first + n))


def hw_events(first: int, n: int) -> list[dict]:
    return [
        {
            "ph": "X",
            "name": f"op_{i}",
            "pid": 7,
            "tid": 1,
            "ts": f"{1_780_000_000_000_000 + i}.5",
            "dur": "1.25",
            "args": {"Task Id": i, "Stream Id": 2},
        }
        for i in range(first, first + n)
    ]


def _append(p: Path, data: bytes) -> None:
    with p.open("ab") as fh:
        fh.write(data)


def grow_before_read(monkeypatch, name: str, grow) -> None:
    """Run ``grow(path)`` on the file called ``name`` after the scan, just before it is read."""
    real = export_reader._read_one

    def hooked(f, ctx):
        if f.path.name == name:
            grow(f.path)
        return real(f, ctx)

    monkeypatch.setattr(export_reader, "_read_one", hooked)


def ingest_once(tmp_path: Path, dump: Path):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        return ingest(dump, wh)


def issues_of(result, kind: str) -> list[str]:
    return [line for line in result.issues if f": {kind}: " in line]


def test_csv_growing_during_the_ingest_is_read_as_measured(tmp_path, monkeypatch):
    dump = tmp_path / "export"
    dump.mkdir()
    f = dump / "kernel_details.csv"
    f.write_text(CSV_HEADER + csv_rows(0, 3))
    measured = f.stat().st_size
    extra = csv_rows(3, 2).encode()
    grow_before_read(monkeypatch, f.name, lambda p: _append(p, extra))

    result = ingest_once(tmp_path, dump)
    assert f.stat().st_size == measured + len(extra)  # it did grow
    assert result.rows_by_table["task_runs"] == 3  # the rows written before the scan, not the 2 after
    row = result.row
    assert row["data_bytes"] == measured == row["bytes_decoded"] and row["bytes_skipped"] == 0
    [grown] = issues_of(result, "grown_while_read")
    assert grown.startswith(f"kernel_details.csv at byte {measured}: ") and f"{len(extra)} bytes" in grown
    assert result.losses == {}  # not a loss: the next run reads the file again


def test_timeline_growing_during_the_ingest_is_read_as_measured(tmp_path, monkeypatch):
    dump = tmp_path / "export"
    dump.mkdir()
    f = dump / "msprof_20260601142439.json"
    name = {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "Ascend Hardware"}}
    f.write_text(json.dumps([name, *hw_events(0, 4)]))
    measured = f.stat().st_size
    # a producer appending: the next events, after the document measured
    extra = ("\n" + json.dumps(hw_events(4, 3))).encode()
    grow_before_read(monkeypatch, f.name, lambda p: _append(p, extra))

    result = ingest_once(tmp_path, dump)
    assert result.rows_by_table["task_runs"] == 4
    row = result.row
    assert row["data_bytes"] == measured == row["bytes_decoded"] and row["bytes_skipped"] == 0
    [grown] = issues_of(result, "grown_while_read")
    assert grown.startswith(f"{f.name} at byte {measured}: ") and f"{len(extra)} bytes" in grown
    assert not issues_of(result, "unreadable_file")


def _insert_tasks(p: Path, n: int) -> None:
    con = sqlite3.connect(p)
    first = ROWS["TASK"][-1][4] + 1
    con.executemany(
        "INSERT INTO TASK VALUES (?, ?, 3, 7, ?, 42, 0, 4294967295, 2, ?, 4294967295)",
        [(10 * i, 10 * i + 5, first + i, 100 + i) for i in range(n)],
    )
    con.commit()
    con.close()


def test_database_changed_after_the_scan_is_not_read_and_reported(tmp_path, monkeypatch):
    dump = tmp_path / "export"
    dump.mkdir()
    f = build(dump / "msprof_0.db")
    measured = f.stat().st_size
    grow_before_read(monkeypatch, f.name, lambda p: _insert_tasks(p, 2000))

    result = ingest_once(tmp_path, dump)
    assert f.stat().st_size > measured
    assert result.rows_by_table.get("task_runs", 0) == 0  # neither the 3 old rows nor the 2000 new ones
    row = result.row
    assert row["data_bytes"] == measured == row["bytes_skipped"] and row["bytes_decoded"] == 0
    [changed] = issues_of(result, "changed_while_read")
    assert changed.startswith("msprof_0.db at byte 0: ") and f"{measured} bytes then" in changed
    assert result.losses == {"changed_while_read": 1}  # the run lacks the database: data lost


def test_database_changed_after_its_copy_is_read_as_copied(tmp_path, monkeypatch):
    dump = tmp_path / "export"
    dump.mkdir()
    f = build(dump / "msprof_0.db")
    measured = f.stat().st_size
    real = export_db._snapshot
    copies = []

    def snapshot_then_grow(path, *args):
        copy = real(path, *args)
        copies.append(copy)
        _insert_tasks(path, 2000)
        return copy

    monkeypatch.setattr(export_db, "_snapshot", snapshot_then_grow)
    result = ingest_once(tmp_path, dump)
    grown = f.stat().st_size - measured
    assert grown > 0
    assert result.rows_by_table["task_runs"] == len(ROWS["TASK"])
    row = result.row
    assert row["data_bytes"] == measured == row["bytes_decoded"] and row["bytes_skipped"] == 0
    [line] = issues_of(result, "grown_while_read")
    assert line.startswith(f"msprof_0.db at byte {measured}: ") and f"{grown} bytes" in line
    [copy] = copies
    assert copy.parent != dump and not copy.exists()  # taken outside the dump, deleted after the read
