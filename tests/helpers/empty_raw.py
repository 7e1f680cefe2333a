"""An in-memory DuckDB holding every raw table of the contracts, empty: SQL tests fill what they need."""

from __future__ import annotations

import duckdb

from pipeline.warehouse.contracts import RAW_TABLES, contracts


def empty_raw_tables() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name in RAW_TABLES:
        cols = ", ".join(f"{c.name} {c.sql_type}" for c in contracts("raw")[name].columns)
        con.execute(f"create table {name} ({cols})")
    return con
