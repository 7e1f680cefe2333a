"""Documentation generated from the code: docs/tables.md from schemas/ and the SQL headers,
docs/cli.md from every command's --help.

``python -m pipeline.docs`` rewrites both; tests/project/test_docs.py fails when either is stale.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

from pipeline.jobs.transforms import sql_files
from pipeline.resources import ROOT, SCHEMAS_DIR
from pipeline.warehouse.contracts import Contract, contracts
from pipeline.warehouse.views import RUN_VIEW_COLUMNS

DOCS_DIR = ROOT / "docs"
GENERATIONS_FILE = SCHEMAS_DIR / "generations.toml"
HELP_WIDTH = 100

# Meanings of columns that many raw tables share, used where a contract leaves one blank
# (marked † in the docs).
GLOSSARY = {
    "run_id": "Run the row belongs to (a column of every part file)",
    "device_id": "Device id (64 = host)",
    "source_file": "Raw file holding the record's first byte, relative to the run root",
    "seq": "Record index within its stream of slices (file order)",
    "stream_id": "Stream id",
    "task_id": "Task id",
    "batch_id": "Batch id (high half of the producer's task id, or the flip count)",
    "model_id": "Model id",
    "request_id": "Request id of the model execution",
    "tid": "Host thread id",
    "task_type": "Runtime task type code (0 AI Core kernel, 1 AI CPU kernel, 5 memory copy, ...)",
    "start_ns": "Start on the run timeline",
    "end_ns": "End on the run timeline",
    "ts_ns": "Time on the run timeline",
    "timestamp_syscnt": "Raw device counter value of the record",
    "overflow": "Counter overflow flag as recorded (non-zero: a counter overflowed)",
    "context_id": "FFTS+ subtask (context) id; NULL where the record has none",
}
_COUNTER = re.compile(r"^counter_(\d)$")


def generations() -> dict:
    """schemas/generations.toml: the layout generations and the tables each fills."""
    return tomllib.loads(GENERATIONS_FILE.read_text(encoding="utf-8"))


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _fallback(name: str) -> str:
    if name in GLOSSARY:
        return GLOSSARY[name]
    m = _COUNTER.match(name)
    if m:
        return f"PMU counter slot {m.group(1)}; its event id is pmu_event_ids[{int(m.group(1)) + 1}] of the device"
    return ""


def column_rows(c: Contract) -> list[dict]:
    """Every column of the table as the docs show it: name, type, unit, meaning, display header."""
    documented = {}
    if c.layer == "marts":
        documented = next((f.documented_columns() for f in sql_files("marts") if f.name == c.name), {})
    rows = []
    if c.name != "runs":
        rows.append(
            {
                "name": "run_id",
                "type": "string",
                "unit": "",
                "meaning": GLOSSARY["run_id"],
                "display": "Run ID",
                "glossary": False,
            }
        )
    for col in c.columns:
        unit, meaning = documented.get(col.name, (col.unit, col.description))
        unit = unit or col.unit
        meaning = meaning or col.description
        glossary = False
        if not meaning:
            meaning, glossary = _fallback(col.name), True
        rows.append(
            {
                "name": col.name,
                "type": col.type,
                "unit": unit,
                "meaning": meaning,
                "display": col.display,
                "glossary": glossary and bool(meaning),
            }
        )
    if c.name == "runs":
        for name, (typ, meaning) in RUN_VIEW_COLUMNS.items():
            rows.append(
                {
                    "name": name,
                    "type": typ,
                    "unit": "",
                    "meaning": meaning + " (in the `runs` view only)",
                    "display": "",
                    "glossary": False,
                }
            )
    return rows


def _sql_method(name: str) -> list[str]:
    """The header lines of sql/marts/<name>.sql from ``Follows:`` up to ``Columns:``."""
    f = next((f for f in sql_files("marts") if f.name == name), None)
    if f is None:
        return []
    out, on = [], False
    for line in f.header():
        if line.startswith("Columns:"):
            break
        if line.startswith("Follows:"):
            on = True
        if on:
            out.append(line)
    return out


def _filled_by(name: str, gens: dict) -> str:
    if name in gens.get("always", []):
        return "every generation"
    nums = [str(g["number"]) for g in gens["generation"] if name in g["tables"]]
    return ", ".join(nums) if nums else "none yet"


def _about(c: Contract) -> tuple[str, str]:
    """A table's description and sources: a raw table's contract holds them, a mart's SQL
    header (the one source of both; its contract has neither)."""
    if c.layer != "marts":
        return c.description, c.sources
    f = next(f for f in sql_files("marts") if f.name == c.name)
    return f.summary[:1].upper() + f.summary[1:], f.section("Sources")


def tables_markdown() -> str:
    gens = generations()
    lines = [
        "# Tables",
        "",
        "<!-- Generated by `python -m pipeline.docs` from schemas/ and the headers of sql/marts/*.sql;",
        "     edit those, not this file. tests/project/test_docs.py fails when it is stale. -->",
        "",
        "Every table is a view in `profetl query` and can be exported with `profetl export`. Raw",
        "tables hold what the dumps say; marts are the reports built from them with the SQL in",
        "`sql/`. Every row carries `run_id`; `join runs using (run_id)` adds the run's metadata.",
        "Times are integer nanoseconds on the run timeline unless the unit says otherwise.",
        "",
        "Layout generations (which dumps a table's rows can come from):",
        "",
    ]
    for g in gens["generation"]:
        lines.append(f"- **{g['number']}** {g['name']}")
    lines += ["", "| table | layer | one row per | generations that fill it |", "|---|---|---|---|"]
    layers = [("raw", "Raw tables"), ("marts", "Marts (reports)")]
    for layer, _ in layers:
        for name, c in contracts(layer).items():
            lines.append(
                f"| [`{name}`](#{name}) | {layer} | {_cell(_about(c)[0])} | {_filled_by(name, gens)} |"
            )
    lines.append("")
    for layer, title in layers:
        lines += [f"## {title}", ""]
        for name, c in contracts(layer).items():
            description, sources = _about(c)
            lines += [f"### {name}", "", _cell(description), ""]
            grain = c.grain
            if c.grain_nullable:
                grain += f" (NULL is a value of {c.grain_nullable}; the other columns are never NULL)"
            lines.append(f"- Grain: {_cell(grain)}")
            if sources:
                lines.append(f"- Sources: {_cell(sources)}")
            lines.append(f"- Filled by layout generations: {_filled_by(name, gens)}")
            lines.append(
                f"- Contract: `schemas/{layer}/{name}.toml`"
                + (f"; SQL: `sql/marts/{name}.sql`" if layer == "marts" else "")
            )
            lines.append("")
            method = _sql_method(name) if layer == "marts" else []
            if method:
                lines += ["```text"] + method + ["```", ""]
            if layer == "marts":
                lines += ["| column | header | type | unit | meaning |", "|---|---|---|---|---|"]
            else:
                lines += ["| column | type | unit | meaning |", "|---|---|---|---|"]
            for r in column_rows(c):
                meaning = _cell(r["meaning"]) + (" †" if r["glossary"] else "")
                head = [f"`{r['name']}`"] + ([_cell(r["display"])] if layer == "marts" else [])
                lines.append("| " + " | ".join(head + [r["type"], _cell(r["unit"]), meaning]) + " |")
            lines.append("")
    lines += [
        "† meaning from the glossary of shared column names in `pipeline/docs.py`; the contract leaves it blank.",
        "",
    ]
    return "\n".join(lines)


def command_help(name: str | None) -> str:
    from typer.testing import CliRunner

    from pipeline.cli.main import app

    args = ([name] if name else []) + ["--help"]
    r = CliRunner().invoke(
        app,
        args,
        terminal_width=HELP_WIDTH,
        prog_name="profetl",
        env={"PROFETL_WAREHOUSE": None, "COLUMNS": str(HELP_WIDTH)},
    )
    if r.exit_code != 0:
        raise RuntimeError(f"profetl {' '.join(args)} failed: {r.output}")
    return r.output.rstrip() + "\n"


def cli_markdown() -> str:
    from pipeline.cli.main import COMMANDS

    lines = [
        "# Command line",
        "",
        "<!-- Generated by `python -m pipeline.docs` from every command's --help; edit the",
        "     docstrings and options in pipeline/cli/, not this file. -->",
        "",
        '<a id="exit-codes"></a>',
        "Exit codes: 0 done (or nothing to do); 1 a dump, table or query failed, or the output",
        "could not be written (a full disk; one line says why); 2 usage or configuration error",
        "(also a warehouse written by profetl 0.2, which readers refuse until `profetl check",
        "--repair` upgrades it);",
        "3 the warehouse is locked by another live writer; 4 `compare` found",
        "a regression beyond `--threshold`; 5 the dumps of `run` were all built or unchanged, but",
        "some built with data lost (bytes skipped, unreadable metadata, missing files or slices);",
        "6 the Dask scheduler given with `--scheduler` cannot be reached;",
        "130 interrupted (Ctrl-C, SIGINT): `profetl: interrupted`, the night's later dumps are not",
        "started and the run in progress is not committed (its files go with the writer's",
        "temporary folder);",
        "141 the reader of standard output went away",
        "(`profetl export ... | head`), quietly, as for tools stopped by SIGPIPE.",
        "",
        "A Ctrl-C that lands while DuckDB runs a statement on several threads may, with DuckDB",
        "2.0.1, leave the process waiting in DuckDB's cancellation for good (seen with long",
        "single statements such as a large `query`); a second Ctrl-C does not help, `kill`",
        "does, and the warehouse stays consistent as after any kill.",
        "",
        "Shell completion: `profetl --install-completion` (bash, zsh, fish, PowerShell) completes",
        "commands, options, run ids and table names.",
        "",
        "Commands: " + ", ".join(f"[`{n}`](#profetl-{n})" for n in COMMANDS),
        "",
        "## profetl",
        "",
        "```text",
        command_help(None).rstrip(),
        "```",
        "",
    ]
    for name in COMMANDS:
        lines += [f"## profetl {name}", "", "```text", command_help(name).rstrip(), "```", ""]
    return "\n".join(lines)


def expected() -> dict[Path, str]:
    return {DOCS_DIR / "tables.md": tables_markdown(), DOCS_DIR / "cli.md": cli_markdown()}


def main(argv: list[str] | None = None) -> int:
    """Write the generated docs; with --check, only report which are stale (exit 1)."""
    argv = sys.argv[1:] if argv is None else argv
    stale = []
    for path, text in expected().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if "--check" not in argv:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if '--check' in argv else 'wrote'} {path.relative_to(ROOT)}")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main())
