"""Read access: an in-memory DuckDB with one view per table over the committed part files.

Nothing here writes to the warehouse and no lock is taken: readers see the runs whose
commit records exist, through the part files those records name.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from pipeline.contracts import RAW_TABLES, Contract, contracts
from pipeline.errors import QueryFailed
from pipeline.warehouse import Warehouse

_DUCK = {"int32": "INTEGER", "int64": "BIGINT", "uint64": "UBIGINT", "float64": "DOUBLE",
         "string": "VARCHAR", "bool": "BOOLEAN", "list<int32>": "INTEGER[]", "list<string>": "VARCHAR[]",
         "timestamp": "TIMESTAMPTZ"}


def _quote(path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _empty_view(c: Contract) -> str:
    cols = ["NULL::VARCHAR AS run_id"] + [f"NULL::{_DUCK[col.type]} AS {col.name}" for col in c.columns]
    return "SELECT " + ", ".join(cols) + " WHERE false"


def _view_sql(wh: Warehouse, layer: str, c: Contract, runs: list[dict]) -> str:
    files = wh.current_files(layer, c.name, runs)
    if not files:
        return _empty_view(c)
    listing = "[" + ", ".join(_quote(f) for f in files) + "]"
    names = ", ".join(col.name for col in c.columns)
    return (f"SELECT run_id, {names} FROM read_parquet({listing}, hive_partitioning = true, "
            f"hive_types = {{'run_id': VARCHAR}}, union_by_name = true)")


def connect(wh: Warehouse, run_ids: list[str] | None = None) -> duckdb.DuckDBPyConnection:
    """A connection with views ``runs``, every raw table and every mart (optionally some runs only)."""
    runs = wh.runs()
    if run_ids is not None:
        wanted = set(run_ids)
        runs = [r for r in runs if r["run_id"] in wanted]
    con = duckdb.connect()
    if runs:
        listing = "[" + ", ".join(_quote(wh.run_file(r["run_id"])) for r in runs) + "]"
        con.execute(f"CREATE VIEW runs AS SELECT * FROM read_parquet({listing}, hive_partitioning = false)")
    else:
        c = contracts("raw")["runs"]
        con.execute("CREATE VIEW runs AS SELECT " + ", ".join(
            f"NULL::{_DUCK[col.type]} AS {col.name}" for col in c.columns) + " WHERE false")
    for name in RAW_TABLES:
        con.execute(f"CREATE VIEW {name} AS {_view_sql(wh, 'raw', contracts('raw')[name], runs)}")
    for name, c in contracts("marts").items():
        con.execute(f"CREATE VIEW {name} AS {_view_sql(wh, 'marts', c, runs)}")
    return con


@dataclass
class QueryResult:
    columns: list[str]
    table: pa.Table

    @property
    def rows(self) -> list[tuple]:
        cols = [self.table.column(i).to_pylist() for i in range(self.table.num_columns)]
        return list(zip(*cols)) if cols else []


READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN"}


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Only queries: a COPY, ATTACH, CREATE or other statement could write files."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None
    for st in statements:
        kind = str(st.type).rsplit(".", 1)[-1]
        if kind not in READ_ONLY_STATEMENTS:
            raise QueryFailed(f"only SELECT queries are allowed here, not {kind}: the warehouse is read-only to `query`")
    if len(statements) != 1:
        raise QueryFailed(f"give one SELECT statement, not {len(statements)}")


def query(wh: Warehouse, sql: str, params: dict | None = None) -> QueryResult:
    con = connect(wh)
    try:
        check_read_only(con, sql)
        rel = con.sql(sql, params=params or None)
        if rel is None:  # a statement without a result
            return QueryResult([], pa.table({}))
        table = rel.to_arrow_table()
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None
    finally:
        con.close()
    return QueryResult(table.column_names, table)
