"""The ``query`` command's library: one read-only SELECT over the warehouse's views, kept in
memory (the first rows) or streamed to a file; and ``write_consistent``, the streamed write
that ``export`` shares."""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from pipeline.errors import QueryFailed
from pipeline.outputs.formats import write_batches
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import read_consistent


# rows per batch streamed from DuckDB to an output file
BATCH_ROWS = 100_000


@dataclass
class QueryResult:
    columns: list[str]
    table: pa.Table  # every row, or the first ``limit`` of them
    total_rows: int = 0  # rows the query returned

    @property
    def rows(self) -> list[tuple]:
        cols = [self.table.column(i).to_pylist() for i in range(self.table.num_columns)]
        return list(zip(*cols)) if cols else []


READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN"}

# EXPLAIN [ANALYZE] [(options)] in front of the statement it explains, comments allowed between
_GAP = r"(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/)*"
_EXPLAIN = re.compile(rf"^{_GAP}explain\b{_GAP}(?:analy[sz]e\b{_GAP})?(?:\([^()]*\){_GAP})?", re.I | re.S)


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Only queries: a COPY, ATTACH, CREATE, INSTALL or other statement could write files or
    fetch code, and so could one under EXPLAIN ANALYZE (which runs it): an EXPLAIN passes only
    when what it explains is a SELECT."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None
    if len(statements) != 1:
        raise QueryFailed(f"give one SELECT statement, not {len(statements)}")
    kind = _kind(statements[0])
    text = statements[0].query
    while kind == "EXPLAIN":
        m = _EXPLAIN.match(text)
        try:
            inner = con.extract_statements(text[m.end():]) if m else []
        except duckdb.Error:
            inner = []
        if len(inner) != 1:
            raise QueryFailed("EXPLAIN is allowed here only in front of one SELECT")
        kind, text = _kind(inner[0]), inner[0].query
        if kind not in READ_ONLY_STATEMENTS:
            kind = "EXPLAIN " + kind
    if kind not in READ_ONLY_STATEMENTS:
        raise QueryFailed(f"only SELECT queries are allowed here, not {kind}: the warehouse is read-only to `query`")


def _kind(statement) -> str:
    return str(statement.type).rsplit(".", 1)[-1]


def write_consistent(wh: Warehouse, select, fmt: str, out: str, headers: list[str] | None = None,
                     run_ids: list[str] | None = None, tables=None, **sandbox) -> int:
    """Write the rows of ``select(con)`` (a schema and a stream of record batches) to ``out``
    as they are read, on fresh views like ``read_consistent``. A file is written again from
    the start on the second try; standard output cannot take back the rows it already got, so
    there a writer replacing a run mid-way is an error instead."""
    tries = 0

    def read(con):
        nonlocal tries
        tries += 1
        if tries > 1 and out == "-":
            raise QueryFailed("a writer replaced a run while its rows were written to standard output; run the command again")
        schema, batches = select(con)
        return write_batches(batches, schema, fmt, out, headers)

    return read_consistent(wh, read, run_ids, tables, **sandbox)


def query_to(wh: Warehouse, sql: str, fmt: str, out: str, params: dict | None = None, confine: bool = False) -> int:
    """Run one read-only query and stream its rows to ``out`` as CSV, JSON lines or Parquet
    (on a locked-down connection, ``lock_down``)."""
    def select(con):
        check_read_only(con, sql)
        reader = con.sql(sql, params=params or None).to_arrow_reader(BATCH_ROWS)
        return reader.schema, reader

    try:
        return write_consistent(wh, select, fmt, out, sandbox=True, confine=confine)
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None


def query(wh: Warehouse, sql: str, params: dict | None = None, limit: int | None = None,
          confine: bool = False) -> QueryResult:
    """Run one read-only query on a locked-down connection (``lock_down``); keep every row, or
    the first ``limit`` (the rest are counted, not kept, so the head of a huge result costs the
    memory of the head)."""
    def read(con):
        check_read_only(con, sql)
        rel = con.sql(sql, params=params or None)
        if rel is None:
            return pa.table({}), 0
        reader = rel.to_arrow_reader(BATCH_ROWS)
        kept, n, total = [], 0, 0
        for batch in reader:
            total += batch.num_rows
            if limit is None or n < limit:
                part = batch if limit is None else batch.slice(0, limit - n)
                kept.append(part)
                n += part.num_rows
        return pa.Table.from_batches(kept, reader.schema), total

    try:
        table, total = read_consistent(wh, read, sandbox=True, confine=confine)
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None
    return QueryResult(table.column_names, table, total)
