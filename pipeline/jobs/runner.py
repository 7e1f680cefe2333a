"""The units of work the commands run: ingest a dump, build a run, or both for every dump under roots."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import MissingInput, PipelineError
from pipeline.jobs.dumps import find_dumps
from pipeline.jobs.ingest import IngestResult, ingest
from pipeline.jobs.tags import run_tags
from pipeline.paths import display
from pipeline.warehouse.compaction import compact
from pipeline.warehouse.contracts import RAW_TABLES
from pipeline.warehouse.store import Warehouse

if TYPE_CHECKING:
    from pipeline.jobs.build import BuildResult


def _build(
    wh: Warehouse, run: dict, tables_filled: list[str], memory_limit: str, threads: int | None, cluster=None
) -> tuple[BuildResult, dict]:
    """Build one run: the result and the run row after it. pipeline.jobs.build, and with it DuckDB,
    loads at the first job that builds, so `profetl ingest` starts without them."""
    from pipeline.jobs.build import build, with_build

    b = build(wh, run, memory_limit, threads, cluster)
    return b, with_build(run, b, tables_filled)


@dataclass
class Outcome:
    """What happened to one dump."""

    source_path: str
    status: str  # built, ingested, unchanged, failed
    run_id: str | None = None
    error: str | None = None
    ingest: IngestResult | None = None
    build: BuildResult | None = None
    issues: list[str] = field(default_factory=list)

    @property
    def losses(self) -> dict[str, int]:
        """Data lost in what this outcome read (nothing when the dump was not read again)."""
        return self.ingest.losses if self.ingest is not None and not self.ingest.skipped else {}

    @property
    def label(self) -> str:
        """The status as the commands print it: ``retagged`` for an unchanged dump recorded
        again with new tags."""
        retagged = self.status == "unchanged" and self.ingest is not None and self.ingest.retagged
        return "retagged" if retagged else self.status


def ingest_dump(
    wh: Warehouse,
    dump: Path,
    force: bool = False,
    then_build: bool = True,
    memory_limit: str | None = None,
    threads: int | None = None,
    cluster=None,
    readers=None,
    layout: str | None = None,
    tags: dict[str, str] | None = None,
) -> Outcome:
    """Ingest one dump (and build it), committing the run once at the end. Hold the writer lock.
    With ``cluster`` (pipeline.jobs.cluster.Cluster) its devices are read and built there; with
    ``readers`` (pipeline.jobs.cluster.Threads) only read there, side by side in this process.
    ``tags``: the run's (``pipeline.jobs.tags.run_tags``: the command line's and the dump's tags
    file's)."""
    res = ingest(dump, wh, force=force, cluster=cluster or readers, layout=layout, tags=tags)
    if res.skipped:
        status = "unchanged"
        if then_build and res.row.get("build_id") is None:
            b, row = _build(wh, res.row, res.row["tables_filled"], memory_limit, threads, cluster)
            wh.held_writer().commit_run(row)
            return Outcome(display(dump), "built", res.run_id, ingest=res, build=b, issues=b.issues)
        if res.retagged:  # the same data, recorded again with the tags given now
            wh.held_writer().commit_run(res.row)
        return Outcome(display(dump), status, res.run_id, ingest=res)
    row = res.row
    b = None
    try:
        if then_build:
            b, row = _build(wh, row, row["tables_filled"], memory_limit, threads, cluster)
        wh.held_writer().commit_run(row)
    except BaseException:
        wh.held_writer().discard_uncommitted(res.run_id)  # the new raw files (and marts) no commit names
        raise
    issues = res.issues + (b.issues if b else [])
    return Outcome(
        display(dump), "built" if b else "ingested", res.run_id, ingest=res, build=b, issues=issues
    )


def rebuild(
    wh: Warehouse, run: dict, memory_limit: str | None = None, threads: int | None = None, cluster=None
) -> Outcome:
    raw_filled = [t for t in run["tables_filled"] if t in RAW_TABLES]
    b, row = _build(wh, run, raw_filled, memory_limit, threads, cluster)
    try:
        wh.held_writer().commit_run(row)
    except BaseException:
        wh.held_writer().discard_uncommitted(run["run_id"])  # the new marts no commit names
        raise
    return Outcome(run["source_path"], "built", run["run_id"], build=b, issues=b.issues)


def check_inputs(paths: list[Path]) -> None:
    """Raise ``MissingInput`` (a usage error, exit 2) when none of ``paths`` exists: the command
    line names nothing that is there, so there is nothing to do. (Beside a root that exists, a
    missing one fails as a dump that cannot be read does, and the others go on.)"""
    if paths and not any(Path(p).exists() for p in paths):
        raise MissingInput(display(paths[0]))


def run_roots(
    wh: Warehouse,
    roots: list[Path],
    force: bool = False,
    then_build: bool = True,
    memory_limit: str | None = None,
    threads: int | None = None,
    on_dump=None,
    cluster=None,
    readers=None,
    tags: dict[str, str] | None = None,
) -> list[Outcome]:
    """Every dump under every root, each its own run; a failing dump does not stop the others.
    With ``cluster`` each dump's devices are read and built there, one dump after another.
    Roots none of which exists are a usage error, raised before any work (``check_inputs``);
    so is a dump's tags file that is not one (TagsFileInvalid). ``tags``: given on the command
    line, for every dump (each dump's tags file adds those they do not give)."""
    check_inputs(roots)
    if then_build:
        from pipeline.jobs.build import check_settings

        check_settings(memory_limit, threads)  # a bad setting fails every dump: say so once, up front
        from pipeline.analysis.advice import configured

        configured(wh)  # so does a bad advice.toml
    outcomes: list[Outcome] = []
    dumps: list[tuple[Path, str]] = []
    for root in roots:
        unreadable: list = []
        try:
            found = find_dumps(Path(root), unreadable=unreadable)
        except PipelineError as e:
            outcomes.append(Outcome(display(root), "failed", error=str(e)))
            continue
        for path, reason in unreadable:  # a folder that may hold dumps no one will see: a failure
            outcomes.append(
                Outcome(
                    display(path),
                    "failed",
                    error=f"{display(path)}: cannot be searched for dumps "
                    f"({reason}); the rest of {display(root)} was",
                )
            )
        if not found and not unreadable:
            outcomes.append(
                Outcome(
                    display(root),
                    "failed",
                    error=f"{display(root)}: no dump found (a result_dir holds data/ with hiprof-era files)",
                )
            )
        dumps.extend(found)
    # each dump's tags, read before any dump is: a bad tags file is a usage error
    tags_of = {dump: run_tags(dump, tags) for dump, _ in dumps}
    for dump, layout in dumps:
        if on_dump:
            on_dump(dump)
        try:
            outcomes.append(
                ingest_dump(
                    wh,
                    dump,
                    force,
                    then_build,
                    memory_limit,
                    threads,
                    cluster,
                    readers,
                    layout,
                    tags_of[dump],
                )
            )
        except PipelineError as e:
            outcomes.append(Outcome(display(dump), "failed", error=str(e)))
        except OSError as e:
            outcomes.append(
                Outcome(display(dump), "failed", error=f"{display(e.filename or dump)}: {e.strerror}")
            )
        except Exception as e:  # noqa: BLE001 - one dump's bug must not stop the night's other dumps
            outcomes.append(
                Outcome(display(dump), "failed", error=f"internal error: {type(e).__name__}: {e}")
            )
    if dumps:
        w = wh.held_writer()
        compact(w)  # old small runs into group files: few files however many nights
        for e in w.damaged_parts:  # the night's runs are committed; the damage is a failure of its own
            outcomes.append(Outcome(display(e.path), "failed", error=str(e)))
    return outcomes
