"""profetl check: verify the warehouse against its run index; repair the index."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.errors import ExitCode, UsageError
from pipeline.warehouse.check import CheckReport, check, repair
from pipeline.warehouse.layout import check_run_id


def command(
    repair_: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Upgrade a warehouse written by profetl 0.2; restore a missing or damaged run index from its newest usable kept version (runs/_history/), or rebuild it from the part files' commit records, under the writer lock; drop the runs named by --drop; nothing else is deleted.",
        ),
    ] = False,
    drop: Annotated[
        list[str] | None,
        typer.Option(
            "--drop",
            metavar="RUN_ID",
            show_default=False,
            help="With --repair: drop this run (exact id; repeatable), e.g. one whose files are damaged, or a run of profetl 0.2 whose commit record cannot be read (before the upgrade).",
        ),
    ] = None,
    warehouse: common.WarehouseOpt = None,
    wait: common.WaitOpt = 0.0,
    fmt: common.TableOrJsonOpt = None,
    json_: common.AliasJsonOpt = False,
) -> None:
    """Verify every file the run index names: present, of its recorded size and SHA-256,
    readable as Parquet, with its table's columns; list the files no run owns; say run by
    run what is whole. Exit 0 when whole, 1 when damage is found (one line per damaged file,
    then a summary line), 2 for a warehouse written by profetl 0.2 (without --repair), 3 when
    --repair finds another writer.

    Files no run owns (left by a writer that died) are listed but are not damage: the next
    writer's sweep removes them. --repair first upgrades a warehouse written by profetl 0.2 (a
    commit record per run, no run index) to the current layout, as any writing command would; a
    run of it whose commit record cannot be read stops the upgrade, nothing changed, until
    --drop names it. --repair restores a missing or damaged index from the newest
    kept version whose files are all there with their recorded sizes (the damaged index is kept
    as runs/_runs.parquet.damaged); with no usable version it rebuilds the index from the commit
    records written beside the part files (<layer>/_commits/), every run whose files are whole,
    and names what it could not rebuild; with neither it changes nothing and says so. It drops
    only the runs --drop names.

    Example: profetl check --repair --drop 20260302T010000-1a2b3c4d
    """
    json_ = common.wants_json(fmt, json_)
    wh = common.warehouse(warehouse)
    restored = None
    with common.errors():
        wh.check(must_exist=True)
        if drop and not repair_:
            raise UsageError("--drop works only with --repair")
        for r in drop or []:
            check_run_id(r)
        if repair_:
            restored = repair(wh, drop or [], wait_seconds=wait)
            report = restored.after
        else:
            report = check(wh)
    if json_:
        out = _json(report)
        if restored is not None:
            out["repair"] = {
                "restored_from": restored.restored_from,
                "rebuilt_runs": restored.rebuilt_runs,
                "not_rebuilt": restored.not_rebuilt,
                "damaged_index_kept_as": restored.kept_damaged,
                "dropped": restored.dropped,
                "upgraded_runs": restored.upgraded_runs,
            }
        common.print_json(out)
    else:
        p = lambda s: common.out.print(s, highlight=False, markup=False)  # noqa: E731
        if restored is not None:
            # the runs dropped, said where they were dropped: before an upgrade, else last
            dropped = [f"dropped    {r}  ({n} file(s))" for r, n in restored.dropped.items()]
            for line in dropped if restored.upgraded_runs else ():
                p(line)
            if restored.upgraded_runs:
                p(f"upgraded   {wh.path} from profetl 0.2's layout: {restored.upgraded_runs} run(s)")
            if restored.restored_from:
                p(
                    f"restored   {report.index} from {restored.restored_from}"
                    + (
                        f" (the damaged index kept as {restored.kept_damaged})"
                        if restored.kept_damaged
                        else ""
                    )
                )
            if restored.rebuilt_runs:
                p(
                    f"rebuilt    {report.index} from the commit records of {restored.rebuilt_runs} run(s)"
                    + (
                        f" (the damaged index kept as {restored.kept_damaged})"
                        if restored.kept_damaged
                        else ""
                    )
                )
            for why in restored.not_rebuilt:
                p(f"not rebuilt {why}")
            for line in dropped if not restored.upgraded_runs else ():
                p(line)
        for line in _lines(report):
            p(line)
    if not report.whole:
        raise typer.Exit(ExitCode.FAILED)


def _lines(rep: CheckReport) -> list[str]:
    out = []
    if rep.index_problem:
        out.append(f"damaged    {rep.index}: {rep.index_problem}")
    for f in rep.damaged_files:
        out.append(f"damaged    {f.file}: {f.problem}")
    for f in rep.unowned:
        out.append(f"unowned    {f}")
    for r in rep.runs:
        if not r.whole:
            out.append(f"run        {r.run_id}: damaged ({len(r.problems)} file(s))")
    whole = sum(r.whole for r in rep.runs)
    index = f"index {rep.index_problem.split(' (')[0]}" if rep.index_problem else "index whole"
    out.append(
        f"{'whole' if rep.whole else 'DAMAGED'}: {index}; {whole} of {len(rep.runs)} run(s) whole; "
        f"{len(rep.files)} file(s) checked, {len(rep.damaged_files)} damaged; {len(rep.unowned)} unowned"
        + (f"; {rep.unrecorded} part(s) without recorded sizes" if rep.unrecorded else "")
        + (f"; {rep.no_record} part(s) without a commit record" if rep.no_record else "")
    )
    return out


def _json(rep: CheckReport) -> dict:
    return {
        "whole": rep.whole,
        "index": {"file": rep.index, "problem": rep.index_problem},
        "runs": [{"run_id": r.run_id, "whole": r.whole, "problems": r.problems} for r in rep.runs],
        "damaged_files": [
            {"file": f.file, "problem": f.problem, "recorded_size": f.recorded_size, "size": f.size}
            for f in rep.damaged_files
        ],
        "files_checked": len(rep.files),
        "unowned": rep.unowned,
        "parts_without_commit_record": rep.no_record,
    }
