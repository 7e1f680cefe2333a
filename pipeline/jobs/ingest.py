"""Ingest: one dump directory into the warehouse's raw tables, as one run.

The raw part files are written into a temporary folder inside the warehouse, then
renamed into their tables' folders under a fresh ingest id. Nothing is visible until the
run index names that id (``Writer.commit_run``).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pipeline import __version__
from pipeline.errors import InputError, MissingInput, ReplacementRefused
from pipeline.jobs.dumps import Dump, discover, same_content, scan_dump, unchanged
from pipeline.jobs.dumps import run_id as make_run_id
from pipeline.jobs.units import merge_reads, read_into, read_unit, split_table, unit_label
from pipeline.paths import display
from pipeline.progress import report
from pipeline.readers.issues import BYTE_KINDS, Issue, IssueLog
from pipeline.readers.versions import from_metadata_json, software_versions
from pipeline.warehouse.contracts import RAW_TABLES
from pipeline.warehouse.faults import checkpoint
from pipeline.warehouse.layout import check_run_id, new_id, sharded_id
from pipeline.warehouse.store import Warehouse


@dataclass
class IngestResult:
    run_id: str
    source_path: str
    skipped: bool = False  # unchanged dump already in the warehouse
    row: dict = field(default_factory=dict)  # the runs row to commit
    rows_by_table: dict[str, int] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)  # one line each
    losses: dict[str, int] = field(default_factory=dict)  # issues that stand for data lost, by kind
    replaced: dict | None = None  # the commit record this ingest replaces (a changed dump), if any
    # an unchanged dump whose run is recorded again, not read: its tags changed (or it was
    # recorded before profetl kept tags and versions); ``row`` is the row to commit
    retagged: bool = False


def identify(dump: Dump) -> tuple[str, int | None, dict[str, str]]:
    """Run id, collection start and the texts that name the dump, read before any data file."""
    start_us, texts = dump.identity()
    return make_run_id(start_us, texts), start_us, texts


def first_run_id(dump: Dump) -> tuple[str, int | None, dict[str, str], str]:
    """The run id of ``dump`` before the index is looked at (``ingest`` adds the content key
    when another folder's run has it), its collection start, the texts that name it and its
    fingerprint. A dump without a control file to tell it from another started alike is named
    by its content. Two dumps of one first run id may be one run: a night never has them in
    flight together (``pipeline.jobs.runner``)."""
    run_id, start_us, texts = identify(dump)
    fp = dump.fingerprint()
    if not texts:
        run_id = make_run_id(start_us, {"content key": fp.split(":", 1)[0]})
    return run_id, start_us, texts, fp


def _add_issue(path: Path, run_id: str, log: IssueLog, rows: dict[str, int], issue: Issue) -> None:
    """One more issue of the whole dump, known only once every unit is read: into ``log`` and
    the ingest_issues file ``path`` (not committed yet, so written again)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.jobs.units import issue_columns, raw_sink
    from pipeline.warehouse.sink import parquet_writer

    old = pq.read_table(path)
    out = path.with_name(path.name + ".tmp")
    sink = raw_sink({"ingest_issues": out}, run_id)
    try:
        sink.write("ingest_issues", issue_columns(IssueLog([issue])))
        sink.close()
    except BaseException:
        sink.abort()
        raise
    both = pa.concat_tables([old, pq.read_table(out).cast(old.schema)])
    out.unlink()
    with parquet_writer(path, old.schema) as w:
        w.write_table(both)
    log.add(issue)
    rows["ingest_issues"] = rows.get("ingest_issues", 0) + 1


def ingest(
    dump: Path,
    wh: Warehouse,
    force: bool = False,
    cluster=None,
    layout: str | None = None,
    tags: dict[str, str] | None = None,
    scanned: Dump | None = None,
) -> IngestResult:
    """Read ``dump`` into new raw part files; the caller commits (or builds, then commits).
    With ``cluster`` (pipeline.jobs.cluster.Cluster) its units are read there; ``layout``: the
    dump's, when whoever found it knows it already. ``tags``: the run's (``pipeline.jobs.tags.run_tags``:
    its tags file's and the command line's); an unchanged dump whose run has other tags is not
    read again but recorded again with them (``retagged``). ``scanned``: the dump's
    ``scan_dump``, when whoever found it has scanned it already."""
    dump = Path(dump)
    if not dump.exists():
        raise MissingInput(display(dump))
    if not dump.is_dir():
        raise InputError("is not a directory", path=display(dump))
    if scanned is None:
        scanned = scan_dump(dump, layout)
    if scanned is None:
        inside = discover(dump, max_depth=3)
        if inside:  # e.g. msprof's output folder holding one PROF_* tree
            names = ", ".join(display(d) for d in inside[:3]) + (", ..." if len(inside) > 3 else "")
            raise InputError(
                f"is not a dump itself but holds {len(inside)}: {names}; ingest one of them, "
                f"or all with `profetl run {display(dump)}`",
                path=display(dump),
            )
        raise InputError(
            "is not a dump profetl can read (no PROF_* tree, profiler_default_tag files, exported "
            "msprof / torch_npu outputs, or result_dir "
            "data/ folder with hiprof-era files)",
            path=display(dump),
        )
    t0 = time.monotonic()
    layout = scanned.layout
    report(phase="ingest", total=scanned.bytes, unit="bytes")
    run_id, start_us, texts, fp = first_run_id(scanned)
    content = fp.split(":", 1)[0]
    existing = wh.run_index().run_record(run_id)
    if existing and not same_content(existing["fingerprint"], fp) and not same_source(existing, dump):
        # the same control files but other data, from another folder: another dump (a copy of
        # a collection's control files, two dumps started alike), so another run
        run_id = f"{run_id}-{content[:8]}"
        existing = wh.run_index().run_record(run_id)
    tags = dict(sorted((tags or {}).items()))
    if existing and unchanged(existing["fingerprint"], fp) and not force:
        if existing.get("tags") == tags:  # (None: recorded before profetl kept tags)
            return IngestResult(run_id, display(dump), skipped=True, row=existing)
        # the same content, other tags (or none recorded yet): the run is recorded again with
        # the tags given now, and the versions its control files record; its parts stay
        row = dict(existing, tags=tags, **from_metadata_json(existing.get("metadata_json")))
        return IngestResult(run_id, display(dump), skipped=True, row=row, retagged=True)

    tmp = wh.temp_dir()
    try:
        if cluster is None:
            read = read_into(tmp, layout, scanned.scanned, run_id)
            meta, log, rows = read.meta, read.log, read.rows
            files = {t: [Path(p) for p in ps] for t, ps in read.files.items()}
            digests = {}
            shards = 1
        else:
            meta, log, rows, files, digests = _read_on(cluster, scanned, run_id, tmp)
            shards = len(files["devices"])
        # a part written by several units is as many files, one per unit (docs/architecture.md#cluster)
        ingest_id = sharded_id(new_id(), shards)
        checkpoint("raw_written")
        decoded = sum(n for t, n in rows.items() if t not in ("devices", "ingest_issues"))
        # a run of nothing: say so, as a loss, unless bytes reported as not decoded explain it
        # (a file that could not be read or changed while read, bytes skipped)
        explained = meta.data_bytes and any(i.kind in BYTE_KINDS for i in log.issues)
        if not decoded and not explained:
            digests.pop(str(files["ingest_issues"][0]), None)  # rewritten below
            why = (
                "every data file of the dump is empty (0 bytes)"
                if not meta.data_bytes
                else f"its data files ({meta.data_bytes} bytes) give no record of any table (name "
                "dictionaries or control data only)"
            )
            _add_issue(
                files["ingest_issues"][0],
                run_id,
                log,
                rows,
                Issue(".", "no_data", f"{why}: the run holds no records"),
            )
        if existing and not force:
            lost = replacement_losses(existing, decoded, log.bytes_skipped(), texts, meta, rows)
            if lost:
                raise ReplacementRefused(
                    f"refused to replace run {run_id} (from {existing['source_path']}, ingested "
                    f"{existing['ingested_at']:%Y-%m-%d %H:%M:%S} UTC): the dump now {'; '.join(lost)}; "
                    "--force replaces it anyway",
                    path=display(dump),
                )
        check_run_id(run_id)
        # (sizes and hashes go into the index at the commit)
        wh.held_writer().place_part("raw", ingest_id, files, digests)
        checkpoint("raw_moved")
    finally:
        wh.drop_temp(tmp)

    row = {
        "run_id": run_id,
        "ingest_id": ingest_id,
        "build_id": None,
        "source_path": display(dump),
        "source_abspath": display(os.path.abspath(dump)),
        "fingerprint": fp,
        "layout_generation": meta.layout_generation,
        "layout": meta.layout,
        "platform_version": meta.platform_version,
        "chip": meta.chip,
        "devices": meta.devices,
        "metric_set": meta.metric_set,
        "metric_set_raw": meta.metric_set_raw,
        "pmu_event_ids": meta.pmu_event_ids,
        "ai_core_profiling_mode": meta.ai_core_profiling_mode,
        "collection_start_us": meta.collection_start_us,
        "ingested_at": datetime.now(UTC),
        "built_at": None,
        "ingest_seconds": time.monotonic() - t0,
        "build_seconds": None,
        "data_bytes": meta.data_bytes,
        "records_decoded": decoded,
        "bytes_decoded": log.bytes_decoded,
        "bytes_skipped": log.bytes_skipped(),
        "issues": len(log),
        "tables_filled": sorted(t for t, n in rows.items() if n and t != "ingest_issues"),
        "status": "ingested",
        "metadata_json": json.dumps(texts, sort_keys=True),
        **software_versions(texts),
        "tags": tags,
        "sources": meta.sources,
        "notes": meta.notes,
        "profetl_version": __version__,
    }
    return IngestResult(
        run_id,
        display(dump),
        row=row,
        rows_by_table=rows,
        issues=[i.line() for i in log.issues],
        losses=log.losses(),
        replaced=existing,
    )


def same_source(run: dict, dump: Path) -> bool:
    """Whether a run's recorded source is the folder ``dump``, as absolute paths: its
    ``source_abspath``, or for a run recorded before that existed its ``source_path`` taken from
    the current folder (as the nightly job runs from one)."""
    recorded = run.get("source_abspath") or os.path.abspath(run["source_path"])
    return recorded == display(os.path.abspath(dump))


def replacement_losses(old: dict, decoded: int, skipped: int, texts: dict, meta, rows: dict) -> list[str]:
    """What a new ingest of a changed dump would lose against the run it replaces, in words;
    empty when nothing is lost (the dump grew, or changed without shrinking)."""
    lost = []
    if decoded < (old.get("records_decoded") or 0):
        lost.append(f"decodes {decoded} records, not {old['records_decoded']}")
    if skipped > (old.get("bytes_skipped") or 0):
        lost.append(f"skips {skipped} bytes, not {old.get('bytes_skipped') or 0}")
    try:
        old_texts = set(json.loads(old.get("metadata_json") or "{}"))
    except ValueError:
        old_texts = set()
    if gone := sorted(old_texts - set(texts)):
        lost.append(f"lacks the readable control file(s) {', '.join(gone[:5])}")
    for name in ("chip", "platform_version", "collection_start_us"):
        if old.get(name) is not None and getattr(meta, name, None) is None:
            lost.append(f"has no {name}")
    filled = {t for t, n in rows.items() if n and t != "ingest_issues"}
    if gone := sorted(set(old.get("tables_filled") or ()) & set(RAW_TABLES) - filled):
        lost.append(f"fills no {', '.join(gone)}")
    return lost


def _read_on(cluster, dump: Dump, run_id: str, tmp: Path):
    """Read ``dump`` unit by unit on ``cluster`` (pipeline.jobs.cluster): the run's metadata,
    issues and rows from all of them, each raw table's files, one per unit in unit order, and
    the files' digests taken on the workers. The largest units start first (a PROF_* job's host
    folder is the longest task: started last, the workers would wait for it); a unit whose
    rows serve several devices is then split by device a table per task, side by side
    (docs/architecture.md#cluster)."""
    units = dump.units()
    # absolute paths: a worker runs in a folder of its own, often on another machine
    where, work = os.path.abspath(dump.path), os.path.abspath(tmp)
    order = sorted(range(len(units)), key=lambda i: -_unit_bytes(dump, units[i]))
    calls = [(read_unit, (dump.layout, where, units[i], i == 0, work, run_id)) for i in order]
    labels = [f"{display(dump.path)}: {unit_label(units[i])}" for i in order]
    reads = [None] * len(units)
    for i, read in zip(order, cluster.run(calls, labels, phase="ingest")):
        reads[i] = read
    splits = [(r, t) for r in reads if r.plan is not None for t in RAW_TABLES]
    if splits:
        # the largest files first, for the same reason
        splits.sort(key=lambda rt: -os.path.getsize(rt[0].files[rt[1]][0]))
        done = cluster.run(
            [(split_table, (r.files[t][0], t, r.plan, work)) for r, t in splits],
            [f"{display(dump.path)}: {unit_label(r.unit)}: {t} split by device" for r, t in splits],
            phase="split",
        )
        for (r, t), (files, digests) in zip(splits, done):
            r.files[t] = files
            r.digests.update(digests)
    meta, log, rows = merge_reads(dump.layout, reads)
    digests = {p: d for r in reads for p, d in r.digests.items()}
    # a unit's files are one shard, or a host unit's one per set of devices it serves
    return meta, log, rows, {t: [Path(p) for r in reads for p in r.files[t]] for t in RAW_TABLES}, digests


def _unit_bytes(dump: Dump, unit) -> int:
    """The data bytes of a unit named by its folder in the dump (a PROF_* collection
    directory); 0 for a unit of another kind (a hiprof-era device: its files are not one folder)."""
    if not isinstance(unit, str):
        return 0
    prefix = unit.rstrip("/") + "/"
    return sum(f.size for f in dump.files if f.rel.startswith(prefix))
