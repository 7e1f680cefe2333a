"""Helpers for the warehouse tests: run the CLI in a subprocess, check consistency."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb

from pipeline.warehouse.commit_records import record_file
from pipeline.warehouse.contracts import RAW_TABLES, contracts
from pipeline.warehouse.index import version_files
from pipeline.warehouse.layout import check_run_id, part_file
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import connect

COUNTED = ("api_calls", "task_states", "pmu_counters", "task_scheduler", "ai_core_metrics")


def profetl(*args, env: dict | None = None, wait: bool = True, **kw):
    cmd = [sys.executable, "-m", "pipeline.cli", *[str(a) for a in args]]
    full_env = {**os.environ, **(env or {})}
    if wait:
        return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=120, **kw)
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env, **kw
    )


def counts(wh_path: Path) -> dict[str, int]:
    con = connect(Warehouse(wh_path))
    try:
        return {t: con.execute(f"select count(*) from {t}").fetchone()[0] for t in COUNTED}
    finally:
        con.close()


def assert_consistent(wh_path: Path) -> None:
    """Every committed run names part files that exist, for every raw table and mart it claims."""
    wh = Warehouse(wh_path)
    for r in wh.run_index().run_records():
        for t in RAW_TABLES:
            files = wh.run_index().files_of_run("raw", t, r)
            assert files and all(f.exists() for f in files), (r["run_id"], t)
        if r["build_id"]:
            for f in existing_files(wh, "marts", "task_scheduler", [r]):
                assert f.exists()
            assert existing_files(wh, "marts", "task_scheduler", [r]), "built run without marts"
    for row in wh.run_index().rows_by_run_id().values():  # and every part a run names has its commit record
        for layer, key in (("raw", "raw_part"), ("marts", "mart_part")):
            if row.get(key):
                assert record_file(wh_path, layer, row[key]).exists(), (row["run_id"], layer)


def part_files(wh_path: Path) -> list[Path]:
    """Every part file (also in the run folders of profetl 0.2's layout, before its upgrade)."""
    return sorted(p for layer in ("raw", "marts") for p in (wh_path / layer).glob("*/**/*") if p.is_file())


def differences(a: Warehouse, b: Warehouse) -> dict[str, tuple[int, int, int]]:
    """Per table: rows only in a, rows only in b (EXCEPT ALL both ways), rows in a."""
    con = duckdb.connect()
    out = {}
    tables = [("raw", t) for t in RAW_TABLES if t != "runs"] + [("marts", t) for t in contracts("marts")]
    for layer, table in tables:
        fa = [str(f) for f in existing_files(a, layer, table)]
        fb = [str(f) for f in existing_files(b, layer, table)]
        assert fa and fb, (layer, table)
        only = [
            con.execute(
                f"select count(*) from (select * from read_parquet({x}, union_by_name=true) except all "
                f"select * from read_parquet({y}, union_by_name=true))"
            ).fetchone()[0]
            for x, y in ((fa, fb), (fb, fa))
        ]
        total = con.execute(f"select count(*) from read_parquet({fa}, union_by_name=true)").fetchone()[0]
        out[f"{layer}/{table}"] = (*only, total)
    return out


def assert_recorded(wh: Warehouse) -> None:
    """The run index lists every part file it names once, with its true size and SHA-256."""
    import hashlib

    from pipeline.warehouse.layout import layer_tables

    entries = recorded_files(wh)
    files = [e["file"] for e in entries]
    assert len(files) == len(set(files))
    named = {
        f
        for layer in ("raw", "marts")
        for table in layer_tables(layer)
        for f in existing_files(wh, layer, table)
    }
    assert {wh.path / f for f in files} == named
    for e in entries:
        data = (wh.path / e["file"]).read_bytes()
        assert (e["size"], e["sha256"]) == (len(data), hashlib.sha256(data).hexdigest()), e["file"]


def fail_on_call(monkeypatch, module, name: str, n: int = 3, error: Exception = OSError("disk full")) -> None:
    """Make ``module.name`` raise ``error`` on its n-th call (a disk that fills in the middle of
    a write), and call the real function otherwise."""
    real, calls = getattr(module, name), []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, failing)


# --- reading a warehouse's files in the tests' terms (the product reads them through a RunIndex) ---


def part_file_of(wh: Warehouse, layer: str, table: str, part: str) -> Path:
    """The one file of ``part`` for ``table`` (layout.part_file)."""
    return part_file(wh.path, layer, table, part)


def own_part_file(wh: Warehouse, layer: str, table: str, run_id: str, part_id: str) -> Path:
    """The file a run's own part ``part_id`` (its ingest or build id) has for ``table``."""
    check_run_id(run_id)
    return part_file(wh.path, layer, table, part_id)


def existing_files(wh: Warehouse, layer: str, table: str, runs: list[dict] | None = None) -> list[Path]:
    """The existing files holding the rows of ``runs`` (default: all) in ``table``."""
    snap = wh.run_index()
    parts = snap.parts_of_runs(layer, None if runs is None else [r["run_id"] for r in runs])
    return [f for p in parts for f in snap.part_files(layer, table, p) if f.exists()]


def recorded_files(wh: Warehouse) -> list[dict]:
    """The part files the current index names with their recorded size and SHA-256."""
    t = wh.run_index().index_table()
    return [] if t is None else version_files(t)


def drop_run(wh: Warehouse, run_id: str) -> int:
    """Drop one run through the writer whose lock is held; the files removed."""
    return wh.held_writer().drop_runs([run_id])[run_id]
