"""Options shared by every command, output helpers, and the error boundary."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from pipeline.errors import ExitCode, PipelineError
from pipeline.warehouse import Warehouse

if TYPE_CHECKING:
    from pipeline.build import BuildResult
    from pipeline.selection import RunSelection


class _StdoutConsole(Console):
    """rich's Console for standard output, except when its reader goes away (`| head`): rich
    then exits with 1, wherever the write happens; profetl stops quietly with PIPE_CLOSED (141),
    as tools stopped by SIGPIPE do and as errors() does for other writers."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise _pipe_closed()


out = _StdoutConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 4000)
err = Console(stderr=True, soft_wrap=True)

WarehouseOpt = Annotated[
    Path,
    typer.Option("--warehouse", "-w", envvar="PROFETL_WAREHOUSE",
                 help="Warehouse folder (default: $PROFETL_WAREHOUSE, else ./warehouse).",
                 show_default=False),
]
DEFAULT_WAREHOUSE = Path("warehouse")
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON instead of a table.")]
MemoryOpt = Annotated[str, typer.Option("--memory-limit", help="DuckDB memory limit for making the tables (spills to disk beyond it).")]
ThreadsOpt = Annotated[int, typer.Option("--threads", help="DuckDB threads for making the tables (0: one per core).")]
WaitOpt = Annotated[float, typer.Option("--wait", help="Seconds to wait for another writer to finish before giving up (exit 3).")]
def complete_run(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of run ids (and ``latest``) from the warehouse named so far."""
    try:
        path = ctx.params.get("warehouse") or os.environ.get("PROFETL_WAREHOUSE") or DEFAULT_WAREHOUSE
        ids = ["latest"] + [r["run_id"] for r in Warehouse(Path(path)).runs()]
    except Exception:  # noqa: BLE001 - completion must never fail the shell
        ids = ["latest"]
    return [i for i in ids if i.startswith(incomplete)]


def complete_table(incomplete: str) -> list[str]:
    from pipeline.contracts import contracts

    names = sorted(contracts("marts")) + sorted(contracts("raw"))
    return [n for n in names if n.startswith(incomplete)]


RunsOpt = Annotated[list[str] | None, typer.Option("--run", "-r", metavar="RUN", show_default=False, autocompletion=complete_run,
                                                  help="Run id, unique prefix or latest; repeat for several runs.")]
RunArg = Annotated[str, typer.Argument(metavar="RUN", autocompletion=complete_run,
                                        help="Run id, unique prefix, or latest (the run ingested last).")]
SinceOpt = Annotated[str | None, typer.Option("--since", metavar="WHEN", show_default=False,
                                              help="Runs collected at or after WHEN (UTC): 2026-03-02, 2026-03-02T01:00, today, yesterday, 7d, 12h.")]
UntilOpt = Annotated[str | None, typer.Option("--until", metavar="WHEN", show_default=False,
                                              help="Runs collected before WHEN (same forms as --since).")]
WorkloadOpt = Annotated[str | None, typer.Option("--workload", metavar="KEY", show_default=False,
                                                 help="Only runs of this workload (the Workload column of `profetl runs`).")]
DeviceOpt = Annotated[list[int] | None, typer.Option("--device", "-d", metavar="ID", show_default=False,
                                                     help="Only these devices; repeat for several.")]
OutOpt = Annotated[str, typer.Option("--out", "-o", metavar="FILE", help="Output file, or - for standard output.")]


def warehouse(path: Path | None) -> Warehouse:
    return Warehouse(path or DEFAULT_WAREHOUSE)


def selection(runs: list[str] | None = None, since: str | None = None, until: str | None = None,
              workload: str | None = None, last: int | None = None) -> RunSelection:
    """The run filter options as the library's RunSelection (raises UsageError on a bad time)."""
    from pipeline.selection import RunSelection, parse_when  # with DuckDB: only for commands that select runs

    return RunSelection(runs=runs or None, since=parse_when(since) if since else None,
                        until=parse_when(until) if until else None, workload=workload, last=last)


@contextmanager
def progress(description: str, total: int | None = None, enabled: bool = True) -> Iterator:
    """A progress bar on stderr when it is a terminal; under cron a no-op (the callers' one-line logs stay).

    Yields ``advance(label)``, called once per finished item.
    """
    if not (enabled and interactive()):
        yield lambda label=None: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.fields[label]}"), console=err, transient=True) as bar:
        task = bar.add_task(description, total=total, label="")
        yield lambda label=None: bar.update(task, advance=1, label=str(label or ""))


@contextmanager
def writing(wh: Warehouse, wait: float = 0.0) -> Iterator[Warehouse]:
    """The writer lock, with a warning when the previous writer died holding it."""
    with wh.writer(wait_seconds=wait):
        if wh.stale_lock:
            err.print(f"profetl: warning: the previous writer (process {wh.stale_lock}) died without "
                      f"releasing {wh.path / '.lock'}; removed {wh.swept} leftover file(s)", highlight=False, markup=False)
        yield wh


@contextmanager
def errors() -> Iterator[None]:
    """Library errors become one line on stderr and the error's exit code; no traceback."""
    try:
        yield
    except PipelineError as e:
        err.print(f"profetl: error: {e}", markup=False, highlight=False)
        raise typer.Exit(e.exit_code) from None
    except BrokenPipeError:
        raise _pipe_closed() from None
    except OSError as e:
        err.print(os_error_line(e), markup=False, highlight=False)
        raise typer.Exit(ExitCode.FAILED) from None
    except (typer.Exit, KeyboardInterrupt):
        raise
    except Exception as e:  # a bug: still one line for cron, the traceback on request
        if os.environ.get("PROFETL_DEBUG"):
            raise
        err.print(f"profetl: internal error: {type(e).__name__}: {e} (PROFETL_DEBUG=1 shows the traceback)",
                  markup=False, highlight=False)
        raise typer.Exit(ExitCode.FAILED) from None


def os_error_line(e: OSError) -> str:
    """The one line for a failed read or write: the file when there is one, and why."""
    where = f"{e.filename}: " if e.filename else ""
    return f"profetl: error: {where}{e.strerror or e}"


def output_failed(e: OSError) -> int:
    """The exit code for a write to standard output that failed outside ``errors()`` (rich
    writes as it prints): a reader gone is PIPE_CLOSED, quietly; another error (a full disk)
    one line on stderr and FAILED."""
    if isinstance(e, BrokenPipeError):
        _detach_stdout()
        return ExitCode.PIPE_CLOSED
    try:
        sys.stderr.write(os_error_line(e) + "\n")
    except (OSError, ValueError):
        pass
    return ExitCode.FAILED


def _pipe_closed() -> typer.Exit:
    """The reader of standard output went away (`profetl export ... | head`): stop quietly, as
    tools stopped by SIGPIPE do, with nothing left to flush into the closed pipe at exit."""
    _detach_stdout()
    return typer.Exit(ExitCode.PIPE_CLOSED)


def _detach_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):  # not a file (a test's capture)
        pass


def interactive() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


def _jsonable(v):
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, Path):
        return str(v)
    return v


def print_json(obj) -> None:
    """Indented JSON: coloured on a terminal; written as it is to a pipe or file, where rich's
    highlighting would cost seconds for thousands of runs and add nothing."""
    text = json.dumps(obj, indent=2, ensure_ascii=False, default=_jsonable)
    if out.is_terminal:
        out.print_json(text)
        return
    try:
        out.file.write(text + "\n")
        out.file.flush()
    except BrokenPipeError:
        out.quiet = True
        raise _pipe_closed() from None


def build_json(b: BuildResult) -> dict:
    """A build as `build --json` and `run --json` print it: rows by mart, seconds in all and by
    step (staging/<table>, marts/<table>), the process's memory high-water mark after each step,
    and where the staging tables were kept (memory or file)."""
    return {"rows": b.rows_by_mart, "seconds": b.seconds, "seconds_by_step": b.seconds_by_step,
            "max_rss_bytes_by_step": b.max_rss_by_step, "staging": b.staging}


def print_table(title: str | None, headers: list[str], rows: list[list[str]], caption: str | None = None) -> None:
    t = Table(title=title, caption=caption, title_justify="left", caption_justify="left", show_lines=False)
    for h in headers:
        t.add_column(h, overflow="fold")
    for r in rows:
        t.add_row(*r)
    out.print(t)
