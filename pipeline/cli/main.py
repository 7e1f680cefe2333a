"""The root ``profetl`` app: every command lives in its own module."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from pipeline import __version__
from pipeline.cli import build, compare, export, ingest, query, run, runs, show, synth, timeline, trend

app = typer.Typer(
    name="profetl",
    help="Ascend NPU profiling dumps into a Parquet warehouse, and the profiling tool's analysis tables.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

COMMANDS = {
    "run": run.command,
    "ingest": ingest.command,
    "build": build.command,
    "runs": runs.command,
    "show": show.command,
    "export": export.command,
    "query": query.command,
    "compare": compare.command,
    "trend": trend.command,
    "timeline": timeline.command,
    "synth": synth.command,
}
for name, fn in COMMANDS.items():
    app.command(name)(fn)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"profetl {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Ascend NPU profiling dumps into a Parquet warehouse, and the profiling tool's analysis tables."""


def main() -> None:
    _memory_pool()
    app()


def _memory_pool() -> None:
    """Arrow's default allocator (mimalloc) keeps freed batches mapped: a long ingest's resident
    memory then grows with the dump (791 MB at 2 GB against 603 MB at 500 MB, bench/). The
    system allocator gives them back (561 / 549 MB) at the same speed. ARROW_DEFAULT_MEMORY_POOL
    still wins when set."""
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
