"""profetl drop: remove runs from the warehouse, on purpose."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.warehouse.layout import check_run_id


def command(
    run_ids: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN_ID...", help="Exact run ids (no prefixes, no latest).", show_default=False
        ),
    ],
    warehouse: common.WarehouseOpt = None,
    wait: common.WaitOpt = 0.0,
    fmt: common.TableOrJsonOpt = None,
    json_: common.AliasJsonOpt = False,
) -> None:
    """Remove runs: their commit records and every file of theirs, under the writer lock.

    The one command that deletes a run's data. A warehouse written by profetl 0.2 is upgraded
    first, as by every writer; a run of it whose commit record cannot be read stops the upgrade,
    and `profetl check --repair --drop RUN_ID` drops it.

    Example: profetl drop 20260302T010000-1a2b3c4d
    """
    json_ = common.wants_json(fmt, json_)
    wh = common.warehouse(warehouse)
    with common.errors():
        wh.check(must_exist=True)
        for r in run_ids:
            check_run_id(r)
        with wh.writer(wait_seconds=wait) as w:
            done = list(w.drop_runs(run_ids).items())  # one commit: a damaged group's runs go together
    if json_:
        common.print_json([{"run_id": r, "files_removed": n} for r, n in done])
        return
    for r, n in done:
        common.out.print(f"dropped    {r}  ({n} file(s))", highlight=False, markup=False)
