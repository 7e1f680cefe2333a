"""Typed library errors. The command line turns each into one line and an exit code."""

from __future__ import annotations


class ExitCode:
    """Documented process exit codes (README, docs)."""

    OK = 0
    FAILED = 1  # a dump, table or query failed; the message names it
    USAGE = 2  # bad arguments or configuration (Typer uses 2 as well)
    LOCKED = 3  # another live writer holds the warehouse lock
    REGRESSION = 4  # compare found a regression beyond --threshold (the data, not profetl, failed)
    DATA_LOSS = 5  # run: every dump built or unchanged, but some built with data lost (bytes skipped, bad metadata, missing files)
    CLUSTER = 6  # the Dask scheduler given with --scheduler cannot be reached
    INTERRUPTED = 130  # Ctrl-C (SIGINT), as for a tool stopped by it: nothing in progress is committed
    PIPE_CLOSED = 141  # the reader of standard output went away (`| head`), as for a tool stopped by SIGPIPE


def is_interrupt(e: BaseException) -> bool:
    """Whether ``e`` is a Ctrl-C: Python's KeyboardInterrupt, or the error DuckDB raises in its
    place when the signal arrives while it runs a statement (it takes the signal, stops the
    query and raises a RuntimeError "Query interrupted"; InterruptException in some versions).
    Such an error must stop the command as the KeyboardInterrupt would have, never pass for
    one dump's or query's failure."""
    if isinstance(e, KeyboardInterrupt):
        return True
    if type(e).__name__ == "InterruptException":
        return True
    return isinstance(e, RuntimeError) and str(e).strip() == "Query interrupted"


class PipelineError(Exception):
    """Base of every error the library raises on purpose."""

    exit_code = ExitCode.FAILED


class InputError(PipelineError):
    """A dump cannot be read: missing, not a dump, or a file that is unusable."""

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}"
            if offset is not None:
                where += f" at byte {offset}"
            where += ": "
        super().__init__(where + message)
        self.path = path
        self.offset = offset


class ReplacementRefused(InputError):
    """A changed dump would replace its run with less: fewer records, more bytes skipped,
    metadata gone. ``--force`` replaces it anyway."""


class UsageError(PipelineError):
    exit_code = ExitCode.USAGE


class MissingInput(InputError, UsageError):
    """An input path given on the command line does not exist: a usage error (exit 2), found
    before any work."""

    def __init__(self, path: str):
        super().__init__("does not exist", path=path)


class TagsFileInvalid(UsageError):
    """A dump's tags file (``profetl-tags.toml``) that is not a flat table of text keys to text
    values: one line naming the file and what is wrong, exit 2 as a bad ``--tag`` is."""

    def __init__(self, path: str, why: str):
        super().__init__(
            f'{path}: not a tags file ({why}); it must be a flat TOML table of KEY = "VALUE" lines'
        )
        self.path = path


class UnknownRun(UsageError):
    pass


class UnknownTable(UsageError):
    pass


class WarehouseLocked(PipelineError):
    exit_code = ExitCode.LOCKED


class ContractInvalid(PipelineError):
    """A contract file (schemas/<layer>/<table>.toml) that cannot be read as one: not TOML, a
    key missing or of the wrong kind, or a key that no code reads."""


class TransformFailed(PipelineError):
    """A SQL transform failed or produced a table that breaks its contract."""


class GrainViolated(TransformFailed):
    """A mart's rows break the grain its contract declares: a grain column that the table
    does not have, a key held by more than one row, or a NULL in a grain column that may not
    be NULL. ``table`` names the mart, ``key`` the offending key (column -> value) when rows
    broke it."""

    def __init__(self, message: str, *, table: str, key: dict | None = None):
        super().__init__(message)
        self.table = table
        self.key = key


class QueryFailed(PipelineError):
    pass


class DamagedRun(PipelineError):
    """A commit record of profetl 0.2's layout (``runs/run_id=<id>/run.parquet``) exists but
    cannot be read, or is another run's: the upgrade of that warehouse stops before changing
    anything, naming the run, until ``profetl check --repair --drop RUN_ID`` drops it."""

    def __init__(self, run_id: str, path, reason: str, warehouse=None):
        where = f" -w {_quoted(warehouse)}" if warehouse is not None else ""
        super().__init__(
            f"run {run_id}: its commit record {path} cannot be read ({reason}); the warehouse, "
            f"written by profetl 0.2, is not upgraded while it is there and nothing was changed: "
            f"`profetl check --repair --drop {run_id}{where}` drops that run (its files too) and "
            "upgrades the rest; `profetl run DUMP` can then ingest its dump again"
        )
        self.run_id = run_id
        self.path = path
        self.reason = reason


class WarehouseNeedsUpgrade(PipelineError):
    """The warehouse was written by profetl 0.2 (a commit record per run, no run index) and has
    not been upgraded: no reader reads it as it is. A writer (``run``, ``ingest``, ``build``,
    ``drop``) upgrades it under its lock before anything else, as ``profetl check --repair``
    does; a reader stops with this one line naming that command (exit 2: the warehouse given
    needs a command run first, as a usage or configuration error does)."""

    exit_code = ExitCode.USAGE

    def __init__(self, path):
        super().__init__(
            f"the warehouse {path} was written by profetl 0.2; upgrade it with: "
            f"profetl check --repair -w {_quoted(path)}"
        )
        self.path = path


def _quoted(path) -> str:
    """A path as a shell word, for the commands the messages name."""
    import shlex

    return shlex.quote(str(path))


# The folder beside the run index that keeps its last versions (pipeline.warehouse.store): its
# leading "_" hides it from readers of the runs folder (pandas, pyarrow datasets, Spark, Hive).
INDEX_HISTORY = "_history"


def _recover(index) -> str:
    """How a lost or damaged run index is recovered: from the versions kept beside it."""
    from pathlib import Path

    return (
        f"`profetl check --repair` restores the newest good version kept in "
        f"{Path(index).parent / INDEX_HISTORY} or rebuilds it from the part files' commit records; "
        "or restore a backup of the warehouse"
    )


class DamagedIndex(PipelineError):
    """The run index (``runs/runs.parquet``) exists but cannot be read, or is not a run index
    (another table's Parquet file, an index of a newer format): every command on the warehouse
    stops with this error, and nothing is swept, compacted or deleted."""

    def __init__(self, path, reason: str):
        super().__init__(
            f"the run index {path} cannot be read ({reason}); nothing was changed: {_recover(path)}"
        )
        self.path = path
        self.reason = reason


class DamagedPart(PipelineError):
    """A part file the index names cannot be read (truncated, garbage) or is missing. What
    needed its rows stops before writing anything (docs/architecture.md#commit): no command
    writes again data it could not read. ``advice`` says what can still be done."""

    def __init__(self, path, reason: str, advice: str = ""):
        what = "is missing" if reason == "missing" else f"cannot be read ({reason})"
        super().__init__(f"the part file {path} {what}" + (f"; {advice}" if advice else ""))
        self.path = path
        self.reason = reason
        self.advice = advice


class MissingIndex(DamagedIndex):
    """The run index is gone but the warehouse holds part files (or kept versions of the
    index): which of them were committed is unknown, so every command stops with this error
    and nothing is swept, compacted or deleted. An empty new warehouse is not this."""

    def __init__(self, path, part_files: int, versions: int):
        PipelineError.__init__(
            self,
            f"the run index {path} is missing but the warehouse holds {part_files} part file(s) and "
            f"{versions} kept version(s) of the index; nothing was changed: {_recover(path)}",
        )
        self.path = path
        self.reason = "missing"
        self.part_files = part_files
        self.versions = versions


class PartSizeMismatch(PipelineError):
    """A committed part file's size is not the size the run index recorded when it was
    committed: it was truncated, extended or replaced since. A reader stops rather than
    answer from it."""

    def __init__(self, path, recorded: int, actual: int, advice: str = ""):
        super().__init__(
            f"{path}: the run index records {recorded} bytes for this part file, it has {actual}; "
            "it was damaged or replaced after its commit: "
            + (advice or "restore it from a backup, or re-ingest its runs (`profetl run --force DUMP`)")
        )
        self.path = path
        self.recorded = recorded
        self.actual = actual


class ClusterUnavailable(PipelineError):
    """The Dask scheduler a command was pointed at cannot be reached."""

    exit_code = ExitCode.CLUSTER


class UnitFailed(PipelineError):
    """A unit of work (a device of a dump, read or built) failed on the cluster: its run fails
    with the reason, the job's other runs go on."""


class IndexNotRestorable(DamagedIndex):
    """``profetl check --repair`` found the run index missing or damaged, no kept version of it
    (runs/_history/) that can be read and whose files are all there with their recorded sizes,
    and no commit record beside the part files that rebuilds a run whole: nothing was changed."""

    def __init__(self, path, reason: str, tried: list[str], records: str = "", not_used: list[str] = ()):
        shown = list(not_used)[:5] + ([f"{len(not_used) - 5} more"] if len(not_used) > 5 else [])
        PipelineError.__init__(
            self,
            f"the run index {path} is {reason} and no kept version of it can restore it"
            f"{' (' + '; '.join(tried) + ')' if tried else ' (none is kept)'}, nor can the part files' "
            f"commit records rebuild it ({records or 'none found'}"
            f"{': ' + '; '.join(shown) if shown else ''}); nothing was changed: "
            "restore the warehouse from a backup",
        )
        self.path = path
        self.reason = reason
        self.tried = tried
