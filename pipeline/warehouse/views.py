"""Read access: an in-memory DuckDB with one view per table over the committed part files, and
a read that is retried once when a writer replaced a run meanwhile.

Nothing here writes to the warehouse and no lock is taken: readers see the runs whose
commit records exist, through the part files those records name.
"""

from __future__ import annotations

import duckdb

from pipeline.warehouse.contracts import RAW_TABLES, Contract, contracts
from pipeline.warehouse.store import Warehouse


def quote(path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _empty_view(c: Contract) -> str:
    cols = ["NULL::VARCHAR AS run_id"] + [f"NULL::{col.sql_type} AS {col.name}" for col in c.columns]
    return "SELECT " + ", ".join(cols) + " WHERE false"


def _view_sql(wh: Warehouse, layer: str, c: Contract, runs: list[dict]) -> str:
    files = wh.current_files(layer, c.name, runs)
    if not files:
        return _empty_view(c)
    listing = "[" + ", ".join(quote(f) for f in files) + "]"
    names = ", ".join(col.name for col in c.columns)
    # UNION BY NAME with the empty contract: a column no part file has yet (a run written by an
    # older profetl, a column added since) reads as NULL instead of failing the whole view
    return (f"SELECT run_id, {names} FROM (SELECT * FROM read_parquet({listing}, hive_partitioning = true, "
            f"hive_types = {{'run_id': VARCHAR}}, union_by_name = true) UNION ALL BY NAME {_empty_view(c)})")


def connect(wh: Warehouse, run_ids: list[str] | None = None, tables=None) -> duckdb.DuckDBPyConnection:
    """A connection with views ``runs``, every raw table and every mart (optionally some runs only).

    Times print in UTC. ``runs`` holds the commit records plus ``RUN_VIEW_COLUMNS``.
    ``tables`` limits the other views to those named (and what ``runs`` reads): a view
    reads the footer of every part file it lists, so fewer views open faster over many runs.
    """
    only = None if tables is None else set(tables) | _RUNS_VIEW_READS
    runs = wh.check().runs()
    if run_ids is not None:
        wanted = set(run_ids)
        runs = [r for r in runs if r["run_id"] in wanted]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    if runs:
        listing = "[" + ", ".join(quote(wh.run_file(r["run_id"])) for r in runs) + "]"
        con.execute(f"CREATE VIEW _run_records AS SELECT * FROM read_parquet({listing}, hive_partitioning = false, union_by_name = true)")
    else:
        c = contracts("raw")["runs"]
        con.execute("CREATE VIEW _run_records AS SELECT " + ", ".join(
            f"NULL::{col.sql_type} AS {col.name}" for col in c.columns) + " WHERE false")
    for name in RAW_TABLES:
        if only is None or name in only:
            con.execute(f"CREATE VIEW {name} AS {_view_sql(wh, 'raw', contracts('raw')[name], runs)}")
    for name, c in contracts("marts").items():
        if only is None or name in only:
            con.execute(f"CREATE VIEW {name} AS {_view_sql(wh, 'marts', c, runs)}")
    con.execute(_RUNS_VIEW)
    return con


# Columns the ``runs`` view adds to the commit records (documented in docs/tables.md).
RUN_VIEW_COLUMNS = {
    "collected_at": ("timestamp", "Collection start (UTC) as a timestamp: collection_start_us"),
    "workload": ("string", "What the run ran, so that runs can be compared over time: "
                 "<layout>/<chip>/<model names joined by +>, or <layout>/<chip>/ops-<hash of the "
                 "sorted op names> when the run has no model records"),
}
_RUNS_VIEW_READS = {"inferences", "task_ops"}
_RUNS_VIEW = """
CREATE VIEW runs AS
SELECT
    r.*,
    make_timestamptz(r.collection_start_us) AS collected_at,
    concat_ws('/', r.layout, coalesce(r.chip, 'unknown-chip'),
              coalesce(m.models, 'ops-' || left(md5(o.ops), 8), 'empty')) AS workload
FROM _run_records AS r
LEFT JOIN (
    SELECT run_id, string_agg(DISTINCT model_name, '+' ORDER BY model_name) AS models
    FROM inferences WHERE model_name IS NOT NULL GROUP BY run_id
) AS m USING (run_id)
LEFT JOIN (
    SELECT run_id, string_agg(DISTINCT op_name, ',' ORDER BY op_name) AS ops
    FROM task_ops WHERE op_name IS NOT NULL GROUP BY run_id
) AS o USING (run_id)
"""


def read_consistent(wh: Warehouse, read, run_ids: list[str] | None = None, tables=None):
    """``read(con)`` on a fresh set of views; once more if a writer replaced a run meanwhile.

    A writer deletes the part files its commit superseded, so a reader that listed them
    just before may find one gone: it then sees the new commit on the second try.
    """
    for attempt in (1, 2):
        con = connect(wh, run_ids, tables)
        try:
            return read(con)
        except duckdb.IOException:
            if attempt == 2:
                raise
        finally:
            con.close()
