"""The SQL transform files: discovery, header parsing, and running them in DuckDB.

Each file under ``sql/staging``, ``sql/intermediate`` and ``sql/marts`` holds one query
whose result is the table named after the file. The runner, not the file, creates the
table, so a file only defines what its table holds. The layers run in that order (dbt's
staging -> intermediate -> marts): staging files read raw tables only; intermediate files
read staging tables (and other intermediate tables) and hold each rule that joins staging tables which several marts
(and the timeline) need, e.g. what ran a task execution, once; mart files read staging and
intermediate tables (tests/sql/test_sql_files.py checks all three).

Within a layer the files run in an order where each comes after the files of its layer that
its header's ``Sources:`` names (a topological order, by name where nothing decides):
the header declares what a file reads, and tests/sql/test_sql_files.py checks that it names
exactly the tables the SQL reads.

A staging or intermediate table is stored (a temporary table of the build's DuckDB, in its
buffer pool and spilled under the memory limit; for a run too big for that, a table of the
build's database file, compressed: pipeline.jobs.build.staging_storage) unless its header says
``Stored: no``: then it is a view, and each file that reads it runs its query. That suits
a table that is cheap to compute and read by few marts, where storing costs more than
computing it again.

A CTE that two branches of a query read is declared ``as not materialized`` when it is
cheap to compute (a filter of one table): DuckDB otherwise stores all its rows before either
branch reads them, and spills them on a big run.

DuckDB's ASOF join sorts every row given to it, on both sides: also rows a later filter drops,
also when the other side is empty. Transforms therefore filter before an ASOF join, not after,
and take by a hash join on the key what needs no ASOF join: the intermediate models that
name an execution's or a PMU record's operator take it by key when every description of its
task says the same and the first is valid from the start, and give the ASOF join only the
other tasks and their descriptions (same rows; tests/sql/test_task_op_keys.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.errors import TransformFailed
from pipeline.resources import SQL_DIR, folder

# the layers made as tables (or views) before the marts, in order
TABLE_LAYERS = ("staging", "intermediate")


@dataclass(frozen=True)
class SqlFile:
    layer: str
    name: str
    path: Path

    @property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def header(self) -> list[str]:
        """The leading comment block, without the ``--`` markers."""
        lines = []
        for line in self.text.splitlines():
            if not line.startswith("--"):
                break
            lines.append(line[2:].removeprefix(" "))
        return lines

    @property
    def summary(self) -> str:
        """What one row is: the header's first paragraph without the leading ``<name>: ``."""
        lines = []
        for line in self.header():
            if not line.strip():
                break
            lines.append(line.strip())
        return " ".join(lines).removeprefix(f"{self.name}:").strip()

    def section(self, label: str) -> str:
        """The text of the header's ``<label>:`` line and its indented continuation lines,
        one space between them."""
        text, on = [], False
        for line in self.header():
            if line.startswith(f"{label}:"):
                on = True
                text.append(line.removeprefix(f"{label}:"))
            elif on and line.startswith(" "):
                text.append(line)
            elif on:
                break
        return " ".join(" ".join(text).split())

    @property
    def sources(self) -> set[str]:
        """The names in the header's ``Sources:`` (with its continuation lines): the tables
        the file reads, among words of prose that name no table."""
        return set(re.findall(r"[a-z_][a-z0-9_]*", self.section("Sources")))

    @property
    def stored(self) -> bool:
        """False when the header has a line ``Stored: no ...`` (the table is then a view)."""
        return not any(re.match(r"^Stored:\s+no\b", line) for line in self.header())

    def documented_columns(self) -> dict[str, tuple[str, str]]:
        """Column name -> (unit, meaning) from the header's ``Columns:`` section."""
        out: dict[str, tuple[str, str]] = {}
        in_cols = False
        for line in self.header():
            if line.startswith("Columns:"):
                in_cols = True
                continue
            if not in_cols:
                continue
            m = re.match(r"^  (\w+)\s+(\S+)\s+(.*)$", line)
            if m:
                unit = "" if m.group(2) == "-" else m.group(2)
                out[m.group(1)] = (unit, m.group(3).strip())
            elif line.strip() and list(out):
                last = list(out)[-1]  # continuation line of the last column's meaning
                unit, meaning = out[last]
                out[last] = (unit, meaning + " " + line.strip())
        return out


def sql_files(layer: str) -> list[SqlFile]:
    """The files of a layer in the order they run (run_order)."""
    return run_order([SqlFile(layer, p.stem, p) for p in sorted(folder(SQL_DIR, layer).glob("*.sql"))])


def run_order(files: list[SqlFile]) -> list[SqlFile]:
    """The files in an order where each follows those of the list its ``Sources:`` names;
    among the files ready to run, the first by name. A cycle is a TransformFailed naming its
    files."""
    by_name = {f.name: f for f in files}
    needs = {f.name: (f.sources & by_name.keys()) - {f.name} for f in files}
    out: list[SqlFile] = []
    while needs:
        ready = sorted(n for n, deps in needs.items() if not deps)
        if not ready:
            cycle = ", ".join(f"{by_name[n].layer}/{n}.sql" for n in sorted(needs))
            raise TransformFailed(f"the Sources: of {cycle} read each other in a cycle")
        name = ready[0]
        out.append(by_name[name])
        del needs[name]
        for deps in needs.values():
            deps.discard(name)
    return out


def load_macros(con: duckdb.DuckDBPyConnection) -> None:
    """``sql/macros/*.sql``: rules several transforms share (each macro created or replaced).
    A table macro binds the tables it reads when it is created: load them after the raw tables."""
    for path in sorted(folder(SQL_DIR, "macros").glob("*.sql")):
        try:
            con.execute(path.read_text(encoding="utf-8"))
        except duckdb.Error as e:
            raise TransformFailed(f"sql/macros/{path.name} failed: {str(e).splitlines()[0]}") from None


def transform_failed(con: duckdb.DuckDBPyConnection, what: str, e: duckdb.Error) -> TransformFailed:
    """The error for a transform DuckDB could not run: its first line, and, when DuckDB ran
    out of its memory limit, the limit and what to change (a bigger dump than the limit
    suits; DuckDB's own hints name its SQL settings, not profetl's options)."""
    message = f"{what} failed: {str(e).splitlines()[0]}"
    if isinstance(e, duckdb.OutOfMemoryException):
        try:
            limit = con.execute("select current_setting('memory_limit')").fetchall()[0][0]
        except duckdb.Error:
            limit = "the memory limit"
        message += (
            f" (DuckDB's memory limit is {limit}: raise it with --memory-limit, or use fewer --threads)"
        )
    return TransformFailed(message)


def run_layer(
    con: duckdb.DuckDBPyConnection,
    layer: str,
    only: set[str] | None = None,
    on_step: Callable[[str], None] | None = None,
    stored_as: str = "temp table",
    before_step: Callable[[str], None] | None = None,
    macros: bool = True,
) -> dict[str, float]:
    """Create every table of a layer (or those named in ``only``) after the shared macros
    (``macros=False``: the caller has loaded them on this connection);
    returns the seconds each took, by name, in the order they were made. A stored table is
    a temporary table, or with ``stored_as="table"`` a table of the connection's database
    file (compressed; pipeline.jobs.build.staging_storage chooses); either way nothing of a build
    outlives its working folder.

    The build stores the staging and intermediate layers this way (run_table_layers); each
    mart's query is streamed once into its file (pipeline.jobs.build). ``on_step(name)`` is called
    after each, ``before_step(name)`` just before its statement runs (the build's profiling
    names the file DuckDB writes the statement's profile to there).
    """
    if macros:
        load_macros(con)
    seconds = {}
    for f in sql_files(layer):
        if only is not None and f.name not in only:
            continue
        kind = stored_as if f.stored else "view"
        if before_step is not None:
            before_step(f.name)
        t0 = time.monotonic()
        try:
            con.execute(f"create or replace {kind} {f.name} as\n{f.text}")
        except duckdb.Error as e:
            raise transform_failed(con, f"sql/{layer}/{f.name}.sql", e) from None
        seconds[f.name] = time.monotonic() - t0
        if on_step is not None:
            on_step(f.name)
    return seconds


def run_table_layers(
    con: duckdb.DuckDBPyConnection,
    only: set[str] | None = None,
    on_step: Callable[[str], None] | None = None,
    stored_as: str = "temp table",
    before_step: Callable[[str], None] | None = None,
) -> dict[str, float]:
    """The staging and then the intermediate layer (run_layer each; ``only`` names tables of
    either); returns the seconds each table took, by "<layer>/<name>", in the order made.
    ``on_step`` and ``before_step`` are called with "<layer>/<name>". The macros are loaded
    once, before the first layer."""
    load_macros(con)
    seconds = {}
    for layer in TABLE_LAYERS:
        step = None if on_step is None else (lambda name, layer=layer: on_step(f"{layer}/{name}"))
        before = None if before_step is None else (lambda name, layer=layer: before_step(f"{layer}/{name}"))
        for name, s in run_layer(
            con, layer, only=only, on_step=step, stored_as=stored_as, before_step=before, macros=False
        ).items():
            seconds[f"{layer}/{name}"] = s
    return seconds
