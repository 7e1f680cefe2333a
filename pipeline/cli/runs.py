"""profetl runs: the runs in the warehouse."""

from __future__ import annotations

from pipeline.analysis.selection import catalog_table, select_runs
from pipeline.cli import common
from pipeline.outputs.cells import cell


def command(
    since: common.SinceOpt = None,
    until: common.UntilOpt = None,
    workload: common.WorkloadOpt = None,
    last: common.LastOpt = None,
    warehouse: common.WarehouseOpt = None,
    fmt: common.TableOrJsonOpt = None,
    json_: common.AliasJsonOpt = False,
) -> None:
    """List the warehouse's runs, oldest collection first: when collected, status, workload,
    chip, devices, records decoded, bytes skipped, issues, tables filled, source, the CANN
    version and the tags (--json: every field, the versions and tags included).

    A warehouse folder without runs lists none; a path with no warehouse is an error (exit 2),
    and so is a warehouse written by profetl 0.2 until `profetl check --repair` upgrades it.

    Example: profetl runs --since 7d --json
    """
    json_ = common.wants_json(fmt, json_)
    wh = common.warehouse(warehouse)
    with common.errors():
        wh.check(must_exist=True)
        sel = common.selection(None, since, until, workload, last)
        # every run's control-file text is left out (not shown, and most of the index's bytes)
        skip = ("metadata_json",)
        runs = (
            select_runs(wh, sel, default_latest=False, exclude=skip)
            if not sel.is_empty()
            else catalog_table(wh, skip).to_pylist(maps_as_pydicts="strict")
        )
    if json_:
        common.print_json(runs)
        return
    if not runs:
        common.out.print(
            f"no runs in {wh.path} yet (profetl run DUMP... adds some)", highlight=False, markup=False
        )
        return
    headers = [
        "Run ID",
        "Collected (UTC)",
        "Status",
        "Workload",
        "Chip",
        "Devices",
        "Records",
        "Bytes skipped",
        "Issues",
        "Tables filled",
        "Source",
        "CANN",
        "Tags",
    ]
    rows = [
        [
            r["run_id"],
            r["collected_at"].strftime("%Y-%m-%d %H:%M:%S") if r["collected_at"] else "N/A",
            r["status"],
            r["workload"] or "N/A",
            r["chip"] or "N/A",
            ",".join(map(str, r["devices"] or [])),
            str(r["records_decoded"]),
            str(r["bytes_skipped"]),
            str(r["issues"]),
            ", ".join(r["tables_filled"] or []),
            r["source_path"],
            r.get("cann_version") or "N/A",
            short_tags(r.get("tags")),
        ]
        for r in runs
    ]
    # one line per run: id, time, status and workload first; the rest as the width allows
    common.print_table(
        f"Runs in {wh.path}",
        headers,
        rows,
        priority=[0, 1, 2, 3, 12, 6, 8, 7, 5, 4, 11, 10, 9],
        see_all="profetl runs --json shows every field",
    )


TAGS_WIDTH = 20  # characters of a run's tags the table shows (--json shows them whole)


def short_tags(tags: dict | None) -> str:
    """A run's tags as ``k=v,k=v`` cut to ``TAGS_WIDTH`` characters ("" without any)."""
    text = cell(tags) if tags else ""
    return text if len(text) <= TAGS_WIDTH else text[: TAGS_WIDTH - 1] + "…"
