"""Ingest and build one dump into a warehouse, then read its tables: what many tests start with."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.jobs.runner import ingest_dump
from pipeline.outputs.export import fetch
from pipeline.warehouse.store import Warehouse


def table_rows(wh: Warehouse, run_id: str) -> Callable[[str], list[dict]]:
    """rows(table): the run's rows of a raw table or mart, without the run_id column."""

    def rows(table: str) -> list[dict]:
        _, t = fetch(wh, table, [run_id])
        return [{k: v for k, v in r.items() if k != "run_id"} for r in t.to_pylist()]

    return rows


def build_dump(wh_path: Path, dump: Path) -> tuple[dict, Callable[[str], list[dict]]]:
    """(the committed run row, rows(table)) after ``ingest_dump`` built ``dump`` into a new warehouse."""
    wh = Warehouse(wh_path)
    with wh.writer():
        outcome = ingest_dump(wh, dump)
    assert outcome.status == "built", outcome.error
    return wh.run_index().run_record(outcome.run_id), table_rows(wh, outcome.run_id)
