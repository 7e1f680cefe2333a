"""The root ``profetl`` app: every command lives in its own module.

A command's module, and the libraries it imports, load only when that command runs:
``profetl ingest`` does not load DuckDB, ``profetl build`` no decoder, so each starts
sooner. The root group resolves command names itself (``LazyGroup``); help and shell
completion list every command, and so load them all.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from contextlib import contextmanager
from typing import Annotated

import typer
from typer.core import TyperGroup

from pipeline import __version__
from pipeline.errors import ExitCode

# the commands, in help order; each is pipeline.cli.<name>.command
COMMANDS = (
    "run",
    "ingest",
    "build",
    "runs",
    "drop",
    "check",
    "show",
    "export",
    "query",
    "compare",
    "trend",
    "timeline",
    "report",
    "site",
    "synth",
)


# Click's UsageError as this Typer raises it: Typer 0.29 and later raise it from a copy of Click
# of their own, earlier versions from click; BadParameter, which Typer exports, is a UsageError
# either way
_UsageError = typer.BadParameter.__mro__[1]
_NoArgsIsHelp = getattr(sys.modules[_UsageError.__module__], "NoArgsIsHelpError", ())


class OneLineUsageError(_UsageError.__mro__[1]):  # (a ClickException, which Typer shows with show())
    """A usage error of the command line (an unknown option or command, a value that is not a
    number, a missing argument) shown as profetl's other errors are: one line on standard error
    and exit 2, instead of Click's usage block."""

    exit_code = ExitCode.USAGE

    def __init__(self, e):
        super().__init__(e.format_message())
        self.command_path = e.ctx.command_path if e.ctx is not None else "profetl"

    def show(self, file=None) -> None:
        print(f"profetl: error: {self.message} (see `{self.command_path} --help`)", file=sys.stderr)


@contextmanager
def _one_line_usage_errors():
    """Click's usage errors raised inside as ``OneLineUsageError`` (not the help a call without
    arguments shows)."""
    try:
        yield
    except _NoArgsIsHelp:
        raise
    except _UsageError as e:
        raise OneLineUsageError(e) from None


class LazyGroup(TyperGroup):
    """The root group: a command's module is imported when Click asks for that command (Click's
    documented way to load subcommands lazily: ``list_commands`` and ``get_command``; Typer's
    groups are Click groups). The usage errors Click raises while it makes the contexts of the
    root and of a command become ``OneLineUsageError`` (a call without arguments still shows
    the help)."""

    def make_context(self, *args, **kwargs):
        with _one_line_usage_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx):
        with _one_line_usage_errors():
            return super().invoke(ctx)

    def list_commands(self, ctx) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx, name: str):
        if name not in self.commands and name in COMMANDS:
            one = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
            one.command(name)(importlib.import_module(f"pipeline.cli.{name}").command)
            self.add_command(typer.main.get_command(one), name)
        return self.commands.get(name)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"profetl {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name="profetl",
    cls=LazyGroup,
    help="Ascend NPU profiling dumps into a Parquet warehouse, and the profiling tool's analysis tables.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Ascend NPU profiling dumps into a Parquet warehouse, and the profiling tool's analysis tables."""


def main() -> None:
    """The ``profetl`` process: the command, then a quick exit (``finish``)."""
    _memory_pool()
    # numpy's floating-point warnings (overflow in a conversion of absurd values) are not
    # messages for the user: what the data lacks is an ingest issue, one line per problem
    import warnings

    warnings.filterwarnings(
        "ignore",
        category=RuntimeWarning,
        message=r"(overflow|invalid value|divide by zero|underflow) encountered",
    )
    try:
        app()
    except SystemExit as e:
        finish(e.code)
    except OSError as e:  # standard output failed where a command printed (a full disk): no traceback
        from pipeline.cli.common import output_failed

        finish(output_failed(e))
    finish(0)


def finish(code) -> None:
    """Exit with the command's code, without collecting the garbage of every loaded module.

    At exit the interpreter's last garbage collections walk every object the loaded modules
    made (DuckDB, Arrow, numpy, pydantic), a noticeable part of every short profetl process,
    for memory the system takes back at once anyway. ``gc.freeze()`` takes them out of those
    collections (bench/HISTORY.md); the rest of the exit is Python's own: ``atexit`` functions
    run and the streams are flushed. Standard output is flushed here first so that a failure to
    write it gets its exit code (a reader gone is PIPE_CLOSED, another failure one line and
    FAILED, as in ``common.errors``); after one, standard output points at /dev/null, so the
    interpreter's own flush at exit finds nothing left to fail on."""
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
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except ValueError:  # stdout closed: nothing of it to flush
        pass
    gc.freeze()
    sys.exit(code)


def _memory_pool() -> None:
    """Arrow's default allocator (mimalloc) keeps freed batches mapped: a long ingest's resident
    memory then grows with the dump. The system allocator gives them back at the same speed
    (bench/HISTORY.md). Arrow takes its default pool from ARROW_DEFAULT_MEMORY_POOL when it first
    allocates, so setting the variable here chooses it without loading pyarrow, which a command
    that never uses Arrow (``query`` printing a table) then does not load; a value already set
    still wins."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
