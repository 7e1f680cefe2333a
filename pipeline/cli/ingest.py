"""profetl ingest: read one dump into the warehouse's raw tables, without building."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.jobs.runner import check_inputs, ingest_dump
from pipeline.jobs.tags import run_tags


def command(
    dump: Annotated[
        Path,
        typer.Argument(
            help="A dump directory of any layout generation: a hiprof result_dir, a PROF_* tree (or a job folder of PROF_* trees), or msprof / torch_npu exported outputs.",
            show_default=False,
        ),
    ],
    warehouse: common.WarehouseOpt = None,
    wait: common.WaitOpt = 0.0,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Re-ingest even when the dump is unchanged; replace the run even when the changed dump now holds less.",
        ),
    ] = False,
    read_threads: common.ReadThreadsOpt = 1,
    tag: common.TagOpt = None,
    fmt: common.TableOrJsonOpt = None,
    json_: common.AliasJsonOpt = False,
) -> None:
    """Ingest one dump into the raw tables as a run (status ingested); `build` makes its reports.

    Tags (--tag, and a profetl-tags.toml in the dump's folder) are recorded with the run.

    Example: profetl ingest data/sample/resnet50_2dev --tag commit=3f2a9c1
    """
    json_ = common.wants_json(fmt, json_)
    tags = common.tags(tag)
    wh = common.warehouse(warehouse)
    with common.errors():
        check_inputs([dump])  # a path that is not there: exit 2 before the warehouse is touched
    with common.errors(), common.readers(read_threads) as readers, common.writing(wh, wait):
        o = ingest_dump(wh, dump, force=force, then_build=False, readers=readers, tags=run_tags(dump, tags))
    row = o.ingest.row
    if json_:
        common.print_json(
            {
                "run_id": o.run_id,
                "status": o.status,
                "rows": o.ingest.rows_by_table,
                "issues": o.issues,
                "tags": row.get("tags"),
            }
        )
        return
    if o.label == "retagged":
        common.out.print(f"retagged   {o.run_id}  {dump}{common.RETAGGED}", highlight=False)
        return
    if o.status == "unchanged":
        common.out.print(
            f"unchanged  {o.run_id}  {dump} (already in the warehouse; --force re-ingests)", highlight=False
        )
        return
    common.out.print(
        f"ingested   {o.run_id}  {dump} ({row['records_decoded']} records, {row['bytes_skipped']} bytes skipped)",
        highlight=False,
    )
    for line in o.issues:
        common.out.print(f"           - {line}", highlight=False, markup=False)
