"""The ``query`` command's library: one read-only SELECT over the warehouse's views, kept in
memory (the first rows) or streamed to a file; and ``write_consistent``, the streamed write
that ``export`` shares."""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb

from pipeline.errors import QueryFailed
from pipeline.warehouse.contracts import RAW_TABLES, names
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import read_consistent

# rows per batch streamed from DuckDB to an output file
BATCH_ROWS = 100_000


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple]  # every row, or the first ``limit`` of them
    total_rows: int = 0  # rows the query returned


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
            inner = con.extract_statements(text[m.end() :]) if m else []
        except duckdb.Error:
            inner = []
        if len(inner) != 1:
            raise QueryFailed("EXPLAIN is allowed here only in front of one SELECT")
        kind, text = _kind(inner[0]), inner[0].query
        if kind not in READ_ONLY_STATEMENTS:
            kind = "EXPLAIN " + kind
    if kind not in READ_ONLY_STATEMENTS:
        raise QueryFailed(
            f"only SELECT queries are allowed here, not {kind}: the warehouse is read-only to `query`"
        )


def _kind(statement) -> str:
    return str(statement.type).rsplit(".", 1)[-1]


def write_consistent(
    wh: Warehouse,
    select,
    fmt: str,
    out: str,
    headers: list[str] | None = None,
    run_ids: list[str] | None = None,
    tables=None,
    **sandbox,
) -> int:
    """Write the rows of ``select(con)`` (a schema and a stream of record batches) to ``out``
    as they are read, on fresh views like ``read_consistent``. A file is written again from
    the start on the second try; standard output cannot take back the rows it already got, so
    there a writer replacing a run mid-way is an error instead."""
    tries = 0

    from pipeline.outputs.formats import write_batches

    def read(con):
        nonlocal tries
        tries += 1
        if tries > 1 and out == "-":
            raise QueryFailed(
                "a writer replaced a run while its rows were written to standard output; run the command again"
            )
        schema, batches = select(con)
        return write_batches(batches, schema, fmt, out, headers)

    return read_consistent(wh, read, run_ids, tables, **sandbox)


def query_to(
    wh: Warehouse, sql: str, fmt: str, out: str, params: dict | None = None, confine: bool = False
) -> int:
    """Run one read-only query and stream its rows to ``out`` as CSV, JSON lines or Parquet
    (on a locked-down connection, ``lock_down``)."""

    def select(con):
        check_read_only(con, sql)
        reader = con.sql(sql, params=params or None).to_arrow_reader(BATCH_ROWS)
        return reader.schema, reader

    try:
        return _on_views(
            sql, lambda views: write_consistent(wh, select, fmt, out, sandbox=True, confine=confine, **views)
        )
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None


def query(
    wh: Warehouse, sql: str, params: dict | None = None, limit: int | None = None, confine: bool = False
) -> QueryResult:
    """Run one read-only query on a locked-down connection (``lock_down``); keep every row, or
    the first ``limit`` (the rest are counted, not kept, so the head of a huge result costs the
    memory of the head: when there are more, DuckDB runs the query again as a count, or, for
    a result read through Arrow, counts its batches)."""

    def read(con):
        check_read_only(con, sql)
        rel = con.sql(sql, params=params or None)
        if rel is None:
            return QueryResult([], [], 0)
        if not all(_plain(t) for t in rel.types):
            return _through_arrow(rel, limit)
        # values DuckDB gives Python as Arrow would (``_PLAIN``): no Arrow to load
        rows = rel.fetchall() if limit is None else rel.limit(limit + 1).fetchall()
        if limit is None or len(rows) <= limit:
            return QueryResult(rel.columns, rows, len(rows))
        # more than the head: counted by DuckDB, which reads no column it does not need
        return QueryResult(rel.columns, rows[:limit], rel.aggregate("count(*)").fetchall()[0][0])

    try:
        return _on_views(sql, lambda views: read_consistent(wh, read, sandbox=True, confine=confine, **views))
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None


# DuckDB types whose Python values (``fetchall``) are those Arrow gives (``to_pylist``), lists
# and structs of them included; a result with another (INTERVAL, MAP, TIMESTAMP_NS, a fixed
# size array, ...) is read through Arrow, so that a value shows the same either way
_PLAIN = {
    "boolean",
    "tinyint",
    "smallint",
    "integer",
    "bigint",
    "hugeint",
    "utinyint",
    "usmallint",
    "uinteger",
    "ubigint",
    "uhugeint",
    "float",
    "double",
    "decimal",
    "varchar",
    "blob",
    "date",
    "time",
    "timestamp",
    "timestamp_s",
    "timestamp_ms",
    "timestamp with time zone",
    "enum",
    "null",
}


def _plain(t) -> bool:
    if t.id in ("list", "struct"):
        return all(_plain(child) for _, child in t.children)
    return t.id in _PLAIN


def _through_arrow(rel, limit: int | None) -> QueryResult:
    """The head of ``rel`` read as Arrow batches, the rest counted batch by batch."""
    reader = rel.to_arrow_reader(BATCH_ROWS)
    kept, n, total = [], 0, 0
    for batch in reader:
        total += batch.num_rows
        if limit is None or n < limit:
            part = batch if limit is None else batch.slice(0, limit - n)
            kept.append(part)
            n += part.num_rows
    rows = []
    for batch in kept:
        cols = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        rows.extend(zip(*cols))
    return QueryResult(reader.schema.names, rows, total)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def named_views(sql: str) -> set[str]:
    """The views whose names appear as words in ``sql`` (anywhere: a table named in a string,
    as ``query_table('op_summary')`` does, counts too). Identifiers are case-insensitive in
    DuckDB, quoted or not."""
    words = {m.lower() for m in _WORD.findall(sql)}
    known = set(RAW_TABLES) | set(names("marts")) | {"runs"}
    if any(w in _CATALOGS or w.startswith(_CATALOG_PREFIXES) for w in words):
        return known  # the query lists the database's tables: all of them are there
    return words & known


# what lists the tables of a DuckDB database (information_schema.tables, duckdb_views(), ...)
_CATALOGS = {"information_schema", "pg_catalog"}
_CATALOG_PREFIXES = ("duckdb_", "pragma_", "sqlite_", "pg_")


def _on_views(sql: str, run):
    """``run(views)`` with ``views`` the keyword arguments of ``read_consistent`` that make only
    the views ``sql`` names: each view lists its part files and reads their footers when it is
    made, and ``runs`` reads every commit record, so a query of one table opens that table
    only. A query that still meets a table it lacks (one it builds the name of) runs again
    with every view."""
    views = named_views(sql)
    try:
        return run({"tables": views - {"runs"}, "records": "runs" in views})
    except duckdb.CatalogException:
        return run({})
