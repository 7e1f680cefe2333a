"""SQL files: one table each, documented headers, layers respected, marts match their contracts."""

from __future__ import annotations

import re

import pytest

from pipeline.errors import TransformFailed
from pipeline.jobs.transforms import SqlFile, run_layer, run_order, run_table_layers, sql_files
from pipeline.resources import ROOT, SQL_DIR
from pipeline.warehouse.contracts import RAW_TABLES, contracts
from tests.helpers.empty_raw import empty_raw_tables

STAGING = [f.name for f in sql_files("staging")]
INTERMEDIATE = [f.name for f in sql_files("intermediate")]
MARTS = [f.name for f in sql_files("marts")]
ALL_FILES = sql_files("staging") + sql_files("intermediate") + sql_files("marts")
TABLE_REF = re.compile(r"\b(?:from|join)\s+([a-z_][a-z0-9_]*)", re.IGNORECASE)
DISTINCT_FROM = re.compile(r"\bis\s+(?:not\s+)?distinct\s+from\b", re.IGNORECASE)  # an operator, not a table


def _references(text: str) -> set[str]:
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    body = DISTINCT_FROM.sub("=", body)
    ctes = set(
        re.findall(
            r"\b([a-z_][a-z0-9_]*)(?:\s*\([^)]*\))?\s+as\s*(?:not\s+)?(?:materialized\s*)?\(",
            body,
            re.IGNORECASE,
        )
    )
    refs = {t for t in TABLE_REF.findall(body)} - ctes - {"query_table"}
    # a table macro of sql/macros (``from step_marks()``) reads what its body reads, and the
    # tables its call names (``op_in_force('with_api', ..., 'stg_task_ops', ...)``: query_table)
    for name in refs & set(TABLE_MACROS):
        refs = (refs - {name}) | TABLE_MACROS[name]
        for args in re.findall(rf"\b{name}\s*\(([^)]*)\)", body):
            refs |= set(re.findall(r"'([a-z_][a-z0-9_]*)'", args)) - ctes
    return refs


def _table_macros() -> dict[str, set[str]]:
    """Table macros of sql/macros/*.sql by name, with the tables each one's body reads."""
    out = {}
    for path in sorted((SQL_DIR / "macros").glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        parts = re.split(r"create\s+(?:or\s+replace\s+)?macro\s+", text, flags=re.IGNORECASE)
        for part in parts[1:]:
            m = re.match(r"([a-z_][a-z0-9_]*)\s*\([^)]*\)\s+as\s+table\b", part, re.IGNORECASE)
            if m:
                out[m.group(1)] = _references(part[m.end() :])
    return out


TABLE_MACROS: dict[str, set[str]] = {}
TABLE_MACROS.update(_table_macros())


@pytest.mark.parametrize("f", ALL_FILES, ids=lambda f: f"{f.layer}/{f.name}")
def test_header_block(f):
    header = "\n".join(f.header())
    assert header.startswith(f"{f.name}: "), "the header starts by naming the table and what one row is"
    for section in ("Grain:", "Sources:", "Follows:", "Columns:"):
        assert section in header, f"{section} missing from the header of {f.path.name}"
    assert f.documented_columns(), "no columns documented"


@pytest.mark.parametrize("f", sql_files("staging"), ids=lambda f: f.name)
def test_staging_reads_raw_only(f):
    refs = _references(f.text)
    assert refs and refs <= set(RAW_TABLES), f"{f.name} reads {sorted(refs - set(RAW_TABLES))}"


@pytest.mark.parametrize("f", sql_files("intermediate"), ids=lambda f: f.name)
def test_intermediate_reads_staging_and_other_intermediate_only(f):
    """An intermediate file may read staging tables and other intermediate tables (made before
    it: test_each_layer_runs_every_file_after_the_files_it_reads)."""
    refs = _references(f.text)
    allowed = set(STAGING) | (set(INTERMEDIATE) - {f.name})
    assert refs and refs <= allowed, f"{f.name} reads {sorted(refs - allowed)}"


@pytest.mark.parametrize("layer", ["staging", "intermediate", "marts"])
def test_each_layer_runs_every_file_after_the_files_it_reads(layer):
    """The run order (sql_files) puts each file after every file of its layer that its SQL
    reads, as found in the SQL text, not in the header the runner orders by."""
    order = [f.name for f in sql_files(layer)]
    assert sorted(order) == sorted(p.stem for p in (SQL_DIR / layer).glob("*.sql"))
    for i, f in enumerate(sql_files(layer)):
        later = set(order[i:])
        assert not _references(f.text) & later, (
            f"{layer}/{f.name} runs before {sorted(_references(f.text) & later)}"
        )


def _fake(tmp_path, name: str, sources: str) -> SqlFile:
    path = tmp_path / f"{name}.sql"
    path.write_text(f"-- {name}: one row per thing.\n--\n-- Sources: {sources}\n-- Follows: x\n\nselect 1\n")
    return SqlFile("intermediate", name, path)


def test_run_order_follows_the_declared_sources_and_names_a_cycle(tmp_path):
    """Worked by hand: c reads b, b reads a (named in a continuation of prose), d reads
    nothing of the layer: a, b, c in that order, d by name among the ready ones; a cycle
    fails naming its files."""
    a = _fake(tmp_path, "int_c", "int_b (its rows), stg_x")
    b = _fake(tmp_path, "int_b", "stg_y, int_a")
    c = _fake(tmp_path, "int_a", "stg_z")
    d = _fake(tmp_path, "int_aa", "stg_z")
    assert [f.name for f in run_order([a, b, c, d])] == ["int_a", "int_aa", "int_b", "int_c"]
    b2 = tmp_path / "int_b.sql"
    b2.write_text("-- int_b: x.\n-- Sources: stg_y,\n--          int_c\n-- Follows: x\n")
    assert b.sources == {"stg_y", "int_c"}
    with pytest.raises(TransformFailed, match=r"intermediate/int_b\.sql, intermediate/int_c\.sql"):
        run_order([a, b, c])


@pytest.mark.parametrize("f", sql_files("marts"), ids=lambda f: f.name)
def test_marts_read_staging_or_intermediate_only(f):
    refs = _references(f.text)
    allowed = set(STAGING) | set(INTERMEDIATE)
    assert refs and refs <= allowed, f"{f.name} reads {sorted(refs - allowed)}"


def test_nothing_reads_a_mart():
    """A mart is the end of the line: no SQL file reads one (the read side reads the part files)."""
    for f in ALL_FILES:
        assert not _references(f.text) & set(MARTS), f"{f.layer}/{f.name} reads a mart"


def test_layer_names_are_prefixed():
    """Staging tables start with stg_, intermediate ones with int_, so a reference says its layer."""
    assert all(n.startswith("stg_") for n in STAGING)
    assert INTERMEDIATE and all(n.startswith("int_") for n in INTERMEDIATE)
    assert not any(n.startswith(("stg_", "int_")) for n in MARTS)


@pytest.mark.parametrize("f", sql_files("marts"), ids=lambda f: f.name)
def test_mart_contract_matches_header(f):
    c = contracts("marts").get(f.name)
    assert c is not None, f"schemas/marts/{f.name}.toml missing"
    assert list(f.documented_columns()) == c.column_names
    for col in c.columns:
        unit, _ = f.documented_columns()[col.name]
        assert unit == col.unit, f"{col.name}: header unit {unit!r}, contract unit {col.unit!r}"


def test_every_contract_has_a_file():
    assert set(contracts("marts")) == set(MARTS)


def test_staging_columns_match_headers():
    """Build empty raw tables from the contracts and check each staging, intermediate and mart
    table's real columns."""
    con = empty_raw_tables()
    run_table_layers(con)
    for f in sql_files("staging") + sql_files("intermediate"):
        got = [r[0] for r in con.execute(f"describe {f.name}").fetchall()]
        assert got == list(f.documented_columns()), f.name
    run_layer(con, "marts")
    for f in sql_files("marts"):
        got = [r[0] for r in con.execute(f"describe {f.name}").fetchall()]
        assert got == list(f.documented_columns()), f.name


def test_staging_tables_are_stored_unless_their_header_says_no():
    """'Stored: no' in a header makes the table a view; every other staging or intermediate
    table is stored as a temporary table."""
    tables = set(STAGING) | set(INTERMEDIATE)
    not_stored = {
        f.name
        for f in sql_files("staging") + sql_files("intermediate")
        if any(line.startswith("Stored:  no") for line in f.header())
    }
    assert {"stg_api_calls", "int_pmu_records_ops"} <= not_stored
    con = empty_raw_tables()
    run_table_layers(con)
    views = {r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()}
    temp_tables = {
        r[0] for r in con.execute("select table_name from duckdb_tables() where temporary").fetchall()
    }
    assert views & tables == not_stored
    assert temp_tables == tables - not_stored


def _names(text: str) -> set[str]:
    return set(re.findall(r"[a-z_][a-z0-9_]*", text))


@pytest.mark.parametrize("f", ALL_FILES, ids=lambda f: f"{f.layer}/{f.name}")
def test_sources_name_exactly_the_tables_read(f):
    """The header's Sources (as the runner reads it to order the files) names every table the
    SQL reads, and no table it does not read; other words there are prose."""
    tables = set(RAW_TABLES) | set(STAGING) | set(INTERMEDIATE) | set(MARTS)
    declared = f.sources & tables
    refs = _references(f.text)
    assert declared == refs, (
        f"Sources: of {f.path.name} omits {sorted(refs - declared)}, names unread {sorted(declared - refs)}"
    )


@pytest.mark.parametrize("f", ALL_FILES, ids=lambda f: f"{f.layer}/{f.name}")
def test_sources_name_every_table_read(f):
    """The header's Sources line and the sources docs/tables.md shows for a mart (taken from
    that header: its contract has none) name every table the SQL reads."""
    header = "\n".join(f.header())
    m = re.search(r"Sources:(.*?)(?:\n\s*[A-Z][a-z]+:|\Z)", header, re.S)
    refs = _references(f.text)
    assert m and refs <= _names(m.group(1)), (
        f"Sources: of {f.path.name} omits {sorted(refs - _names(m.group(1) if m else ''))}"
    )
    c = contracts(f.layer).get(f.name)
    if c is not None:
        assert not c.sources, f"{f.layer}/{f.name}.toml has sources: the SQL header holds them"
        section = f"### {f.name}\n"
        doc = (ROOT / "docs" / "tables.md").read_text(encoding="utf-8")
        shown = doc[doc.index(section) :].split("\n- Sources: ", 1)[1].split("\n", 1)[0]
        assert refs <= _names(shown), (
            f"docs/tables.md sources of {f.name} omit {sorted(refs - _names(shown))}"
        )


def _grain_names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


@pytest.mark.parametrize("f", sql_files("marts"), ids=lambda f: f.name)
def test_mart_header_grain_matches_the_contract(f):
    """The header's Grain: (for the reader) and the contract's grain (which the build audits)
    name the same columns, and the columns the header says NULL is a value of are the
    contract's grain_nullable."""
    c = contracts("marts")[f.name]
    grain = f.section("Grain")
    m = re.match(r"\(([^)]*)\)", grain)
    assert m, f"Grain: of {f.name} does not start with its columns in parentheses"
    assert _grain_names(m.group(1)) == _grain_names(c.grain)
    said = re.search(r";\s*([a-z_, ]+?(?: and [a-z_]+)?) NULL (?:is a value|are values)", grain)
    nullable = set(re.findall(r"[a-z_]+", said.group(1))) - {"and"} if said else set()
    assert nullable == set(c.grain_nullable_columns), (
        f"{f.name}: header {nullable}, contract {c.grain_nullable}"
    )
