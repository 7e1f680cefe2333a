"""The root ``profetl`` app: every command lives in its own module.

A command's module, and the libraries it imports, load only when that command runs:
``profetl ingest`` does not load DuckDB, ``profetl build`` no decoder, so each starts
sooner. Help, shell completion and an unknown command get the whole app.
"""

from __future__ import annotations

import importlib
import os
import sys
from functools import cache
from typing import Annotated

import typer

from pipeline import __version__
from pipeline.errors import ExitCode

# the commands, in help order; each is pipeline.cli.<name>.command
COMMANDS = ("run", "ingest", "build", "runs", "drop", "show", "export", "query", "compare", "trend", "timeline", "report",
            "synth")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"profetl {__version__}")
        raise typer.Exit()


def make_app(names: tuple[str, ...] = COMMANDS) -> typer.Typer:
    """The app with the commands ``names`` (default: all)."""
    app = typer.Typer(
        name="profetl",
        help="Ascend NPU profiling dumps into a Parquet warehouse, and the profiling tool's analysis tables.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    for name in names:
        app.command(name)(importlib.import_module(f"pipeline.cli.{name}").command)

    @app.callback()
    def root(
        version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
    ) -> None:
        """Ascend NPU profiling dumps into a Parquet warehouse, and the profiling tool's analysis tables."""

    return app


@cache
def _whole_app() -> typer.Typer:
    return make_app()


def __getattr__(name: str):
    if name == "app":  # the whole command line, as tests and the docs generator use it
        return _whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def invoked(args: list[str]) -> tuple[str, ...]:
    """The commands to load for a command line: the one it names, else all of them."""
    if args and args[0] in COMMANDS and "_PROFETL_COMPLETE" not in os.environ:  # completing: all names
        return (args[0],)
    return COMMANDS


def main() -> None:
    """The ``profetl`` process: the command, then a quick exit (``exit_now``)."""
    _memory_pool()
    # numpy's floating-point warnings (overflow in a conversion of absurd values) are not
    # messages for the user: what the data lacks is an ingest issue, one line per problem
    import warnings

    warnings.filterwarnings("ignore", category=RuntimeWarning,
                            message=r"(overflow|invalid value|divide by zero|underflow) encountered")
    try:
        make_app(invoked(sys.argv[1:]))()
    except SystemExit as e:
        exit_now(e.code)
    except OSError as e:  # standard output failed where a command printed (a full disk): no traceback
        from pipeline.cli.common import output_failed

        exit_now(output_failed(e))
    exit_now(0)


def exit_now(code) -> None:
    """End the process once the command is done, without the interpreter's teardown.

    Python's exit tears down every loaded module (DuckDB, Arrow, numpy, pydantic) object by
    object, a noticeable part of every short profetl process, for memory the system takes back at
    once anyway. Nothing is left for it to do: the warehouse's files are written, renamed and
    closed by the commands themselves, and DuckDB connections that write are closed. What an
    exit must still do is done here: the ``atexit`` functions run, standard output and error are
    flushed (a reader gone from stdout is PIPE_CLOSED, another failure to write it one line and
    FAILED, as in ``common.errors``), and the exit code is SystemExit's."""
    import atexit

    atexit._run_exitfuncs()
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
    except OSError as e:
        from pipeline.cli.common import output_failed

        failed = output_failed(e)
        code = failed if code == 0 or failed == ExitCode.PIPE_CLOSED else code
    except ValueError:  # stdout closed: nothing of it to flush
        pass
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def _memory_pool() -> None:
    """Arrow's default allocator (mimalloc) keeps freed batches mapped: a long ingest's resident
    memory then grows with the dump. The system allocator gives them back at the same speed
    (bench/HISTORY.md). ARROW_DEFAULT_MEMORY_POOL
    still wins when set."""
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
