"""profetl runs: the runs in the warehouse."""

from __future__ import annotations

from pipeline.cli import common as C


def command(warehouse: C.WarehouseOpt = None, json_: C.JsonOpt = False) -> None:
    """List the warehouse's runs: status, chip, devices, counts, issues, which tables they fill.

    Example: profetl runs --json
    """
    wh = C.warehouse(warehouse)
    with C.errors():
        runs = wh.runs()
    if json_:
        C.print_json([{k: v for k, v in r.items() if k != "metadata_json"} for r in runs])
        return
    headers = ["Run ID", "Status", "Layout", "Chip", "Devices", "Records", "Bytes skipped", "Issues", "Tables filled", "Source"]
    rows = [[
        r["run_id"], r["status"], r["layout"], r["chip"] or "N/A", ",".join(map(str, r["devices"] or [])),
        str(r["records_decoded"]), str(r["bytes_skipped"]), str(r["issues"]),
        ", ".join(r["tables_filled"] or []), r["source_path"],
    ] for r in runs]
    C.print_table(f"Runs in {wh.path}", headers, rows)
