"""profetl query: SQL over every table of every run."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.errors import UsageError

# (the library is imported by the command when it runs: `query --help` and a usage error load
# neither DuckDB nor Arrow; pipeline.outputs.formats.ROW_FORMATS after "table")
FORMATS = ("table", "csv", "json", "parquet")


# What a --param value is bound as: the plain decimal forms SQL writes numbers in, nothing else
# (Python's int() and float() would also take 1_000, nan, inf, " 12" and the like).
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?")


def _value(text: str):
    """An integer if ``text`` is one (DuckDB binds INTEGER, BIGINT or HUGEINT, as its size needs),
    a DOUBLE if it is a decimal number, else the text (VARCHAR)."""
    if _INTEGER.fullmatch(text):
        return int(text)
    if _DECIMAL.fullmatch(text):
        return float(text)
    return text


def _params(items: list[str]) -> dict:
    """``NAME=VALUE`` typed by ``_value``; ``NAME:=VALUE`` always text (a name cannot hold a colon,
    so the form is never a value's own)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        text = name.endswith(":")
        name = name.removesuffix(":")
        if not sep or not name:
            raise UsageError(f"--param takes NAME=VALUE or NAME:=VALUE, not {item!r}")
        out[name] = value if text else _value(value)
    return out


def _sql(arg: str) -> str:
    if arg == "-":
        return sys.stdin.read()
    if arg.startswith("@"):
        path = Path(arg[1:])
        try:
            return path.read_text(encoding="utf-8")
        except OSError as e:  # a missing or unreadable input: a usage error, as for run
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        except UnicodeDecodeError as e:
            raise UsageError(f"{path}: not UTF-8 text at byte offset {e.start}") from None
    return arg


def command(
    sql: Annotated[
        str,
        typer.Argument(
            help="SQL text, @FILE to read a file, or - to read standard input.", show_default=False
        ),
    ],
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            "-p",
            metavar="NAME=VALUE",
            help="Named parameter, used as $NAME in the SQL; repeatable. VALUE is bound as an integer if it is one (42, -7), as a DOUBLE if it is a decimal number (1.5, 2e-3), else as text (nan, 1_000, 0x10 are text). NAME:=VALUE binds text always (-p id:=007).",
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            show_default="table",
            help="table (terminal), csv, json (JSON lines) or parquet (needs --out FILE).",
        ),
    ] = None,
    json_: common.AliasJsonOpt = False,
    out_path: common.OutOpt = "-",
    limit: Annotated[
        int,
        typer.Option(
            "--limit", help="Rows shown by --format table (0: all); the other formats get every row."
        ),
    ] = 100,
    confine: Annotated[
        bool,
        typer.Option(
            "--confine",
            envvar="PROFETL_QUERY_CONFINE",
            help="Also keep file-reading functions (read_csv, read_text, read_blob, glob, ...) inside the warehouse, for boxes where less-trusted users run queries (default: $PROFETL_QUERY_CONFINE).",
        ),
    ] = False,
    warehouse: common.WarehouseOpt = None,
) -> None:
    """Run one SELECT over views of every raw table, every mart and `runs`, across all runs.

    Every view has run_id; `runs` adds each run's metadata (chip, devices, layout,
    collected_at, workload, ...), so `join runs using (run_id)` puts it beside any row.
    Parameters are bound by DuckDB, never pasted into the SQL. The query cannot write a
    file, install or load an extension, or reach the network, whatever the statement.

    Example: profetl query "select r.collected_at, t.op_name, t.avg_ns from task_scheduler t join runs r using (run_id) where t.op_name = $op" -p op=conv2d_0 -f csv
    """
    with common.errors():
        from pipeline.outputs.query import query, query_to

        fmt = common.output_format(fmt, json_, FORMATS, "table")
        if fmt == "table" and out_path != "-":
            raise UsageError("--out needs --format csv, json or parquet")
        wh = common.warehouse(warehouse).check(must_exist=True)  # (no warehouse: no tables to ask)
        if fmt == "table":
            res = query(
                wh,
                _sql(sql),
                _params(param or []),
                limit=limit or None,
                confine=confine,
            )
        else:
            n = query_to(wh, _sql(sql), fmt, out_path, _params(param or []), confine=confine)
    if fmt == "table":
        from pipeline.outputs.cells import cell

        more = res.total_rows - len(res.rows)
        common.print_table(
            None,
            res.columns,
            [[cell(v) for v in row] for row in res.rows],
            caption=f"{more} more row(s): --limit 0 shows all, --format csv writes them" if more else None,
        )
    elif out_path != "-":
        common.err.print(f"wrote {n} row(s) to {out_path}", highlight=False, markup=False)
