"""The SQL transform files: discovery, header parsing, and running them in DuckDB.

Each file under ``sql/staging`` and ``sql/marts`` holds one query whose result is the
table named after the file. The runner, not the file, creates the table, so a file
only defines what its table holds. Staging files read raw tables only; mart files
read staging tables only (tests/test_sql_files.py checks both).

A CTE that two branches of a query read is declared ``as not materialized`` when it is
cheap to compute (a filter of one table): DuckDB otherwise stores all its rows before either
branch reads them, and spills them on a big run (bench/: ``stg_pmu_records`` of a 2 GB run
3.9 -> 2.8 s; rows identical either way).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.errors import TransformFailed
from pipeline.resources import SQL_DIR

LAYERS = ("staging", "marts")


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
    return [SqlFile(layer, p.stem, p) for p in sorted((SQL_DIR / layer).glob("*.sql"))]


def load_macros(con: duckdb.DuckDBPyConnection) -> None:
    """``sql/macros/*.sql``: rules several transforms share (each macro created or replaced)."""
    for path in sorted((SQL_DIR / "macros").glob("*.sql")):
        try:
            con.execute(path.read_text(encoding="utf-8"))
        except duckdb.Error as e:
            raise TransformFailed(f"sql/macros/{path.name} failed: {str(e).splitlines()[0]}") from None


def run_layer(con: duckdb.DuckDBPyConnection, layer: str, materialize: bool = True,
              only: set[str] | None = None) -> dict[str, float]:
    """Create every table of a layer (or those named in ``only``) after the shared macros;
    returns the seconds each took, by name, in the order they were made.

    ``materialize=False`` creates views instead: for a layer nothing else reads (the marts),
    whose rows are streamed once into their files, storing them first is wasted work (the
    time of a view is then spent where it is read).
    """
    load_macros(con)
    seconds = {}
    kind = "table" if materialize else "view"
    for f in sql_files(layer):
        if only is not None and f.name not in only:
            continue
        t0 = time.monotonic()
        try:
            con.execute(f"create or replace {kind} {f.name} as\n{f.text}")
        except duckdb.Error as e:
            first = str(e).splitlines()[0]
            raise TransformFailed(f"sql/{layer}/{f.name}.sql failed: {first}") from None
        seconds[f.name] = time.monotonic() - t0
    return seconds
