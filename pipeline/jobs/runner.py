"""The units of work the commands run: ingest a dump, build a run, or both for every dump under roots."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import MissingInput, PipelineError, is_interrupt
from pipeline.jobs.dumps import find_dumps, scan_dump
from pipeline.jobs.ingest import IngestResult, first_run_id, ingest
from pipeline.jobs.tags import run_tags
from pipeline.limits import NIGHT_LIMITS_PER_THREAD, size_bytes
from pipeline.limits import memory_limit as memory_limit_of
from pipeline.paths import display
from pipeline.progress import UNITS, redirected, report_to_listener
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
    scanned=None,
) -> Outcome:
    """Ingest one dump (and build it), committing the run once at the end. Hold the writer lock.
    With ``cluster`` (pipeline.jobs.cluster.Cluster) its devices are read and built there; with
    ``readers`` (pipeline.jobs.cluster.Threads) only read there, side by side in this process.
    ``tags``: the run's (``pipeline.jobs.tags.run_tags``: the command line's and the dump's tags
    file's). ``scanned``: the dump's ``scan_dump``, when done already."""
    res = ingest(dump, wh, force=force, cluster=cluster or readers, layout=layout, tags=tags, scanned=scanned)
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


def _attempt(dump: Path, job: Callable[[], Outcome]) -> Outcome:
    """``job``'s outcome for ``dump``, or the dump's failure: its error, said in one line."""
    try:
        return job()
    except PipelineError as e:
        return Outcome(display(dump), "failed", error=str(e))
    except OSError as e:
        return Outcome(display(dump), "failed", error=f"{display(e.filename or dump)}: {e.strerror}")
    except Exception as e:  # noqa: BLE001 - one dump's bug must not stop the night's other dumps
        if is_interrupt(e):  # Ctrl-C while DuckDB ran: the night stops, as anywhere else
            raise KeyboardInterrupt from None
        return Outcome(display(dump), "failed", error=f"internal error: {type(e).__name__}: {e}")


def _measure(dump: Path, layout: str):
    """What a night needs to know of a dump before it starts it: its scan (None when it does
    not scan: its own job then says why), its data bytes and its first run id (None unknown)."""
    try:
        scanned = scan_dump(dump, layout)
        if scanned is None:
            return None, 0, None
        return scanned, scanned.bytes, first_run_id(scanned)[0]
    except Exception:  # noqa: BLE001 - the dump's own job fails with the reason, in its outcome
        return None, 0, None


class _NightProgress:
    """The night's progress (pipeline.progress): the dumps' jobs report in threads of their
    own (``of_dump``), the listener hears runs and units done of the night's."""

    def __init__(self, dumps: int) -> None:
        self._lock = threading.Lock()
        self.units_done = 0
        self.units_known = 0
        report_to_listener(phase="night", total=dumps, unit="runs")

    def _units(self) -> None:
        report_to_listener(units=(self.units_done, self.units_known))

    def of_dump(self):
        """Where one dump's job reports, in its thread: the units it hands the cluster and
        those done count for the night; its other reports (bytes, build steps) are not shown."""
        unit = [None]  # the unit of the phase the dump's job is in

        def heard(**what) -> None:
            with self._lock:
                if what.get("phase") is not None:
                    unit[0] = what.get("unit")
                    if unit[0] == UNITS and what.get("total"):
                        self.units_known += what["total"]
                        self._units()
                elif what.get("advance") and unit[0] == UNITS:
                    self.units_done += what["advance"]
                    self._units()

        return redirected(heard)

    def run_done(self) -> None:
        with self._lock:
            report_to_listener(advance=1)


def night(
    dumps: list[tuple[Path, str]],
    one: Callable[..., Outcome],
    at_once: int,
    budget: int | None,
    on_dump=None,
) -> list[Outcome]:
    """Run ``one(dump, layout, scanned)`` for every dump, several at once, each in a thread of
    its own whose units go to the cluster beside the others' (docs/architecture.md#cluster):
    a dump starts, in the order found, once fewer than ``at_once`` are in flight, the data
    bytes of those in flight and its own stay within ``budget`` (a dump bigger than the budget
    runs alone; None: no bound), and no dump in flight may be the same run (its first run id).
    Each job commits its own run when it is done (the Writer serialises the commits), so a
    failing dump fails only its run. The outcomes in the order of ``dumps``."""
    outcomes: list[Outcome | None] = [None] * len(dumps)
    changed = threading.Condition()
    in_flight: dict[int, tuple[int, str | None]] = {}  # dump index -> its data bytes and first run id
    progress = _NightProgress(len(dumps))

    def fits(size: int, key: str | None) -> bool:
        if not in_flight:
            return True
        if len(in_flight) >= at_once or (key is not None and key in {k for _, k in in_flight.values()}):
            return False
        return budget is None or sum(b for b, _ in in_flight.values()) + size <= budget

    def job(i: int, dump: Path, layout: str, scanned) -> None:
        try:
            with progress.of_dump():
                outcome = one(dump, layout, scanned)  # (a dump's failure is its outcome: ``_attempt``)
        except BaseException as e:  # noqa: BLE001 - an interrupt: never leave the night waiting for this dump
            outcome = Outcome(display(dump), "failed", error=f"internal error: {type(e).__name__}: {e}")
        with changed:
            outcomes[i] = outcome
            del in_flight[i]
            progress.run_done()
            changed.notify_all()

    started: list[threading.Thread] = []
    try:
        for i, (dump, layout) in enumerate(dumps):
            scanned, size, key = _measure(dump, layout)
            with changed:
                changed.wait_for(lambda size=size, key=key: fits(size, key))
                in_flight[i] = (size, key)
            if on_dump:
                on_dump(dump)
            t = threading.Thread(
                target=job, args=(i, dump, layout, scanned), name=f"profetl-dump-{i}", daemon=True
            )
            t.start()
            started.append(t)
    finally:
        # (interrupted too: the writer lock is held until the dumps started are done)
        for t in started:
            t.join()
    return outcomes  # type: ignore[return-value]


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
    night_budget: int | None = None,
) -> list[Outcome]:
    """Every dump under every root, each its own run; a failing dump does not stop the others.
    In this process (also with ``readers``), one dump after another. With ``cluster`` each
    dump's devices are read and built there, and several dumps at once (``night``): as many as
    ``cluster.capacity()`` says, holding together at most ``night_budget`` data bytes (None:
    the workers' total memory limit); each run is committed as soon as its dump is done.
    The outcomes are in the order the dumps were found, whatever order they finish in.
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

    def one(dump: Path, layout: str, scanned=None) -> Outcome:
        return _attempt(
            dump,
            lambda: ingest_dump(
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
                scanned,
            ),
        )

    capacity = cluster.capacity() if cluster is not None and dumps else None
    if capacity is None:  # in this process (or in a pool of its threads): one dump after another
        for dump, layout in dumps:
            if on_dump:
                on_dump(dump)
            outcomes.append(one(dump, layout))
    else:
        at_once, budget = capacity
        if night_budget is not None:
            budget = night_budget
        elif budget is None:  # workers without a memory limit: so many build limits per thread
            try:
                budget = (at_once - 1) * NIGHT_LIMITS_PER_THREAD * size_bytes(memory_limit_of(memory_limit))
            except ValueError:  # a limit DuckDB reads and this does not: the dumps bound only by number
                budget = None
        outcomes.extend(night(dumps, one, at_once, budget, on_dump))
    if dumps:
        w = wh.held_writer()
        compact(w)  # old small runs into group files: few files however many nights
        for e in w.damaged_parts:  # the night's runs are committed; the damage is a failure of its own
            outcomes.append(Outcome(display(e.path), "failed", error=str(e)))
    return outcomes
