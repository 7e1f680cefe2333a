"""Options shared by every command, output helpers, and the error boundary."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline import limits
from pipeline.cli.terminal import detach_stdout, escape_controls, pipe_closed
from pipeline.errors import ExitCode, PipelineError, UsageError, is_interrupt

if TYPE_CHECKING:
    from pipeline.analysis.selection import RunSelection
    from pipeline.jobs.build import BuildResult
    from pipeline.warehouse.store import Warehouse


def __getattr__(name: str):
    """``out`` and ``err``, the consoles for standard output and error (``console``), are made
    when first used: loading rich is left to the commands that print through it."""
    if name in ("out", "err"):
        return _console(name)
    if name in ("_PlainConsole", "_StdoutConsole"):
        from pipeline.cli import console

        return console.PlainConsole if name == "_PlainConsole" else console.StdoutConsole
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _console(name: str):
    """The console ``out`` or ``err``: made once, or as a test set it."""
    c = globals().get(name)
    if c is None:
        from pipeline.cli import console

        c = globals()[name] = console.make(name)
    return c


WarehouseOpt = Annotated[
    Path,
    typer.Option(
        "--warehouse",
        "-w",
        envvar="PROFETL_WAREHOUSE",
        help="Warehouse folder (default: $PROFETL_WAREHOUSE, else ./warehouse).",
        show_default=False,
    ),
]
DEFAULT_WAREHOUSE = Path("warehouse")
# what `run` and `ingest` say of an unchanged dump recorded again with other tags
RETAGGED = " (unchanged; recorded again with its new tags)"
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON instead of a table.")]
# --format json and --json say the same on every command: --format FMT is the spelling, --json
# its alias (compare and trend, whose --json and --format json print different things, aside)
AliasJsonOpt = Annotated[bool, typer.Option("--json", help="The same as --format json.")]
TableOrJsonOpt = Annotated[
    str | None,
    typer.Option(
        "--format",
        "-f",
        metavar="table|json",
        show_default="table",
        help="table: the terminal's lines and tables; json: the result as JSON (--json says the same).",
    ),
]


def output_format(fmt: str | None, json_: bool, formats: tuple[str, ...], default: str) -> str:
    """The format ``--format FMT`` and ``--json`` (an alias of ``--format json``) ask for, one of
    ``formats``; a UsageError when they disagree or FMT is not one of them."""
    if json_ and fmt not in (None, "json"):
        raise UsageError(f"--json is --format json: give one of them, not --json with --format {fmt}")
    fmt = "json" if json_ else (default if fmt is None else fmt)
    if fmt not in formats:
        raise UsageError(f"format {fmt!r}; use one of {', '.join(formats)}")
    return fmt


def wants_json(fmt: str | None, json_: bool) -> bool:
    """Whether a command of table-or-JSON output prints JSON (``--format json`` or ``--json``);
    a bad combination is one line and exit 2."""
    with errors():
        return output_format(fmt, json_, ("table", "json"), "table") == "json"


MemoryOpt = Annotated[
    str | None,
    typer.Option(
        "--memory-limit",
        help=f"DuckDB memory limit for making the tables (spills to disk beyond it), e.g. 1GB. Default: 1/{limits.MEMORY_LIMIT_SHARE} of this machine's memory (or its container's limit), at least {limits.MEMORY_LIMIT_FLOOR_MB}MB and at most {limits.MEMORY_LIMIT_CAP_MB}MB.",
        show_default=False,
    ),
]
ThreadsOpt = Annotated[
    int, typer.Option("--threads", help="DuckDB threads for making the tables (0: one per core).")
]
WaitOpt = Annotated[
    float,
    typer.Option("--wait", help="Seconds to wait for another writer to finish before giving up (exit 3)."),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Read and build each dump's devices on a local Dask cluster of N worker processes (needs profetl[dask]).",
        show_default=False,
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Read and build each dump's devices on the running Dask scheduler at this address, e.g. tcp://HOST:8786 (needs profetl[dask]; the warehouse on a filesystem every worker sees; exit 6 when unreachable).",
        show_default=False,
    ),
]


TagOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--tag",
        metavar="KEY=VALUE",
        show_default=False,
        help="Record this tag with the run (lineage: a code commit, a model version, a build id); repeat for several. Adds to the dump's profetl-tags.toml and wins over its tag of the same KEY.",
    ),
]


def tags(specs: list[str] | None) -> dict[str, str]:
    """``--tag`` options as a dict; a malformed one is one line and exit 2."""
    from pipeline.jobs.tags import parse_tags

    with errors():
        return parse_tags(specs)


ReadThreadsOpt = Annotated[
    int,
    typer.Option(
        "--read-threads",
        help="Read each dump's devices side by side in this many threads of this process (1: one after another); more memory, one part file per device.",
    ),
]


@contextmanager
def readers(n: int) -> Iterator:
    """A pool of ``n`` threads that read a dump's devices side by side (``--read-threads``), or
    None for one after another."""
    if n < 1:
        raise UsageError(f"--read-threads {n}: must be 1 or more")
    if n == 1:
        yield None
        return
    from pipeline.jobs.cluster import Threads

    with Threads(n) as pool:
        yield pool


@contextmanager
def cluster(workers: int | None, scheduler: str | None) -> Iterator:
    """The Dask cluster ``--workers`` / ``--scheduler`` ask for, or None (in-process); Dask is
    imported only when one is asked for."""
    if workers is None and scheduler is None:
        yield None
        return
    if workers is not None and scheduler is not None:
        raise UsageError("--workers starts a local cluster, --scheduler uses a running one: give one of them")
    from pipeline.jobs.cluster import Cluster

    with Cluster(workers=workers, scheduler=scheduler) as c:
        _dask_logs_one_line()
        yield c


class _OneLine(logging.Filter):
    """A Dask log record with an exception as one line: the exception's class and message in
    place of its traceback (a client whose scheduler went away logs one while it reconnects; the
    run's outcome already says, in one line, what failed)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            e = record.exc_info[1]
            said = record.getMessage().strip()
            line = f"{type(e).__name__}: {str(e).splitlines()[0]}" if str(e) else type(e).__name__
            record.msg, record.args = f"{said}: {line}" if said else line, ()
        record.exc_info = record.exc_text = record.stack_info = None
        return True


def _dask_logs_one_line() -> None:
    """Put ``_OneLine`` on every handler of Dask's loggers (``distributed`` configures handlers
    of its own on several of them, which do not propagate to the root logger) and on tornado's:
    what a command prints is one line per problem; the library leaves Dask's logging alone."""
    loggers = [
        logging.getLogger(n) for n in list(logging.root.manager.loggerDict) if n.startswith("distributed")
    ]
    # tornado, Dask's event loop, logs a failed callback with its traceback through Python's
    # last-resort handler: a filter on its logger itself
    targets = [*{h for lg in loggers for h in lg.handlers}, logging.getLogger("tornado.application")]
    for target in targets:
        if not any(isinstance(f, _OneLine) for f in target.filters):
            target.addFilter(_OneLine())


def complete_run(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of run ids (and ``latest``) from the warehouse named so far."""
    try:
        path = ctx.params.get("warehouse") or os.environ.get("PROFETL_WAREHOUSE") or DEFAULT_WAREHOUSE
        ids = ["latest"] + [r["run_id"] for r in warehouse(Path(path)).run_index().run_records()]
    except Exception:  # noqa: BLE001 - completion must never fail the shell
        ids = ["latest"]
    return [i for i in ids if i.startswith(incomplete)]


def complete_table(incomplete: str) -> list[str]:
    from pipeline.warehouse.contracts import contracts

    names = sorted(contracts("marts")) + sorted(contracts("raw"))
    return [n for n in names if n.startswith(incomplete)]


RunsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--run",
        "-r",
        metavar="RUN",
        show_default=False,
        autocompletion=complete_run,
        help="Run id, unique prefix or latest; repeat for several runs.",
    ),
]
RunArg = Annotated[
    str,
    typer.Argument(
        metavar="RUN",
        autocompletion=complete_run,
        help="Run id, unique prefix, or latest (the run collected last; back-filled older runs do not change it).",
    ),
]
SinceOpt = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="WHEN",
        show_default=False,
        help="Runs collected at or after WHEN (UTC): 2026-03-02, 2026-03-02T01:00, today, yesterday, 7d, 12h.",
    ),
]
UntilOpt = Annotated[
    str | None,
    typer.Option(
        "--until",
        metavar="WHEN",
        show_default=False,
        help="Runs collected before WHEN (same forms as --since).",
    ),
]
WorkloadOpt = Annotated[
    str | None,
    typer.Option(
        "--workload",
        metavar="KEY",
        show_default=False,
        help="Only runs of this workload (the Workload column of `profetl runs`).",
    ),
]
LastOpt = Annotated[
    int | None,
    typer.Option(
        "--last",
        "-n",
        metavar="N",
        show_default=False,
        help="Only the newest N runs (after the other filters).",
    ),
]
DeviceOpt = Annotated[
    list[int] | None,
    typer.Option(
        "--device", "-d", metavar="ID", show_default=False, help="Only these devices; repeat for several."
    ),
]
OutOpt = Annotated[
    str, typer.Option("--out", "-o", metavar="FILE", help="Output file, or - for standard output.")
]


def warehouse(path: Path | None) -> Warehouse:
    from pipeline.warehouse.store import Warehouse

    return Warehouse(path or DEFAULT_WAREHOUSE)


def selection(
    runs: list[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    workload: str | None = None,
    last: int | None = None,
) -> RunSelection:
    """The run filter options as the library's RunSelection (raises UsageError on a bad time)."""
    from pipeline.analysis.selection import (
        RunSelection,
        parse_when,
    )  # with DuckDB: only for commands that select runs

    return RunSelection(
        runs=runs or None,
        since=parse_when(since) if since else None,
        until=parse_when(until) if until else None,
        workload=workload,
        last=last,
    )


@contextmanager
def progress(description: str, total: int | None = None, enabled: bool = True) -> Iterator:
    """A progress bar on stderr when it is a terminal; under cron a no-op (the callers' one-line logs stay).

    Yields ``advance(label)``, called once per finished item.
    """
    if not (enabled and interactive()):
        yield lambda label=None: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[label]}"),
        console=_console("err"),
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total, label="")
        yield lambda label=None: bar.update(task, advance=1, label=str(label or ""))


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


@contextmanager
def job_progress(dumps: int | None = None, enabled: bool = True) -> Iterator:
    """A live line on stderr for ``profetl run`` / ``ingest`` / ``build`` when it is a terminal:
    the dump (i of n), the phase (ingest, or build and its step), bytes decoded of the dump's
    bytes or steps done of the build's steps, and the elapsed time; for a night on a cluster,
    whose dumps run side by side (``pipeline.progress``), the dumps started, the runs done of the
    night's and the units done on the cluster of those handed to it. Under cron a no-op.

    Yields ``next_dump(label)``, called as each dump starts.
    """
    if not (enabled and interactive()):
        yield lambda label=None: None
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from pipeline import progress as progress_events

    state = {"dump": 0, "label": "", "phase": "", "step": "", "unit": "", "night": None}
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.fields[where]}"),
        BarColumn(bar_width=24),
        TextColumn("{task.fields[amount]}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[step]}"),
        console=_console("err"),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None, where="looking for dumps", amount="", step="")

        def amount() -> str:
            t = bar.tasks[0]
            if state["unit"] == "bytes":
                return f"{_size(t.completed)} of {_size(t.total or 0)}"
            return f"{t.completed:.0f}/{t.total or 0:.0f} {state['unit']}" if state["unit"] else ""

        def where() -> str:
            if state["night"] is not None:  # dumps side by side: how many have started
                return f"{state['dump']}/{state['night']} dumps started, last {state['label']}".strip()
            of = f"/{dumps}" if dumps else ""
            return f"dump {state['dump']}{of} {state['label']}: {state['phase']}".strip()

        def on_report(phase=None, total=None, unit=None, advance=0, step=None, units=None) -> None:
            if phase == "night":
                state.update(night=total, unit=unit or "", step="")
                bar.reset(task, total=total)
            elif phase is not None:
                state.update(phase=phase, unit=unit or "", step="")
                bar.reset(task, total=total)
            if step is not None:
                state["step"] = step
            if units is not None:
                state["step"] = f"{units[0]}/{units[1]} units on the cluster"
            if advance:
                bar.advance(task, advance)
            bar.update(task, where=where(), amount=amount(), step=state["step"])

        def next_dump(label=None) -> None:
            state.update(dump=state["dump"] + 1, label=str(label or ""))
            if state["night"] is None:  # one dump after another: the line is the new dump's
                state.update(phase="", step="", unit="")
                bar.reset(task, total=None)
                bar.update(task, where=where(), amount="", step="")
            else:
                bar.update(task, where=where())

        previous = progress_events.listen(on_report)
        try:
            yield next_dump
        finally:
            progress_events.listen(previous)


@contextmanager
def writing(wh: Warehouse, wait: float = 0.0) -> Iterator[Warehouse]:
    """The writer lock, with a warning when the previous writer died holding it."""
    with wh.writer(wait_seconds=wait) as w:
        if w.stale_lock:
            _console("err").print(
                f"profetl: warning: the previous writer (process {w.stale_lock}) died without "
                f"releasing {wh.path / '.lock'}; removed {w.swept} leftover file(s)",
                highlight=False,
                markup=False,
            )
        yield wh


@contextmanager
def errors() -> Iterator[None]:
    """Library errors become one line on stderr and the error's exit code; no traceback."""
    try:
        yield
    except PipelineError as e:
        _console("err").print(f"profetl: error: {e}", markup=False, highlight=False)
        raise typer.Exit(e.exit_code) from None
    except BrokenPipeError:
        raise pipe_closed() from None
    except OSError as e:
        _console("err").print(os_error_line(e), markup=False, highlight=False)
        raise typer.Exit(ExitCode.FAILED) from None
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        raise interrupted() from None
    except Exception as e:  # a bug: still one line for cron, the traceback on request
        if is_interrupt(e):  # Ctrl-C while DuckDB ran a statement
            raise interrupted() from None
        if os.environ.get("PROFETL_DEBUG"):
            raise
        _console("err").print(
            f"profetl: internal error: {type(e).__name__}: {e} (PROFETL_DEBUG=1 shows the traceback)",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(ExitCode.FAILED) from None


def interrupted() -> typer.Exit:
    """Ctrl-C: one line and exit 130; what was in progress is not committed (a writer's files
    go with its temporary folder)."""
    _console("err").print("profetl: interrupted", markup=False, highlight=False)
    return typer.Exit(ExitCode.INTERRUPTED)


def os_error_line(e: OSError) -> str:
    """The one line for a failed read or write: the file when there is one, and why."""
    where = f"{e.filename}: " if e.filename else ""
    return f"profetl: error: {where}{e.strerror or e}"


def output_failed(e: OSError) -> int:
    """The exit code for a write to standard output that failed outside ``errors()`` (rich
    writes as it prints): a reader gone is PIPE_CLOSED, quietly; another error (a full disk)
    one line on stderr and FAILED."""
    if isinstance(e, BrokenPipeError):
        detach_stdout()
        return ExitCode.PIPE_CLOSED
    try:
        sys.stderr.write(os_error_line(e) + "\n")
    except (OSError, ValueError):
        pass
    return ExitCode.FAILED


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
    out = _console("out")
    if out.is_terminal:
        out.print_json(text)
        return
    try:
        out.file.write(text + "\n")
        out.file.flush()
    except BrokenPipeError:
        out.quiet = True
        raise pipe_closed() from None


def build_json(b: BuildResult) -> dict:
    """A build as `build --json` and `run --json` print it: rows by mart, seconds in all and by
    step (staging/<table>, marts/<table>), the process's memory high-water mark after each step,
    where the staging tables were kept (memory or file), and DuckDB's memory limit."""
    return {
        "rows": b.rows_by_mart,
        "seconds": b.seconds,
        "seconds_by_step": b.seconds_by_step,
        "max_rss_bytes_by_step": b.max_rss_by_step,
        "staging": b.staging,
        "memory_limit": b.memory_limit,
    }


def _header_lines(header: str, width: int) -> str:
    """The header broken at spaces into lines of at most ``width`` (a word longer stays whole)."""
    lines: list[str] = []
    for word in header.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


def fit_columns(
    headers: list[str],
    rows: list[list[str]],
    width: int,
    priority: list[int] | None = None,
    wrap_headers: bool = True,
) -> tuple[list[int], list[int]]:
    """Which columns fit in ``width`` terminal columns with no value split (each column as wide
    as its widest value, its header broken at spaces when ``wrap_headers``): taken in
    ``priority`` order (default: left to right) while they fit; returns (shown, hidden) column
    indexes, each in table order."""

    def need(i: int) -> int:
        value = max((len(r[i]) for r in rows), default=0)
        if not wrap_headers:
            return max(value, len(headers[i])) + 3
        word = max(len(w) for w in headers[i].split(" ")) if headers[i] else 0
        return max(value, word) + 3  # one space each side and the border

    used, shown = 1, []
    for i in priority if priority is not None else range(len(headers)):
        if used + need(i) <= width or not shown:
            used += need(i)
            shown.append(i)
    return sorted(shown), [i for i in range(len(headers)) if i not in shown]


def print_table(
    title: str | None,
    headers: list[str],
    rows: list[list[str]],
    caption: str | None = None,
    priority: list[int] | None = None,
    see_all: str = "--json shows every column",
) -> None:
    """A table whose values are never split across lines: the columns that fit the terminal
    (in ``priority`` order), and a caption naming the rest and ``see_all``. Every text (cells,
    headers, title, caption) is printed as it is, no markup, with control characters (line
    breaks included) escaped."""
    from rich.table import Table
    from rich.text import Text

    out = _console("out")
    headers = [escape_controls(str(h)) for h in headers]
    rows = [["" if v is None else escape_controls(str(v)) for v in r] for r in rows]
    width = out.width
    wrap = bool(
        fit_columns(headers, rows, width, priority, wrap_headers=False)[1]
    )  # headers break only if needed
    shown, hidden = fit_columns(headers, rows, width, priority, wrap_headers=wrap)
    if hidden:
        note = f"{len(hidden)} more column(s) not shown at this width ({', '.join(headers[i] for i in hidden)}): {see_all}"
        caption = f"{caption}; {note}" if caption else note
    t = Table(
        title=None if title is None else Text(escape_controls(title)), title_justify="left", show_lines=False
    )
    for i in shown:
        value = max((len(r[i]) for r in rows), default=0)
        t.add_column(
            Text(_header_lines(headers[i], max(value, 1)) if wrap else headers[i]),
            no_wrap=True,
            min_width=value,
        )
    for r in rows:
        t.add_row(*(Text(r[i]) for i in shown))
    out.print(t)
    if caption:  # under the table, wrapped between words at the terminal's width
        out.print(escape_controls(caption), highlight=False, markup=False, soft_wrap=False, style="italic")
