"""Table contracts: ``schemas/<layer>/<table>.toml`` read into Arrow schemas.

A contract names a table's grain, its sources and every column with its type, unit
and meaning. Readers write raw tables through these schemas, the build checks every
mart against its contract, and the docs are generated from the same files.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pipeline.errors import UnknownTable
from pipeline.lazy import lazy
from pipeline.resources import SCHEMAS_DIR, folder

pa = lazy("pyarrow")  # only the Arrow schemas need it, not the SQL types


@cache
def _arrow_types() -> dict:
    return {
        "int32": pa.int32(),
        "int64": pa.int64(),
        "uint64": pa.uint64(),
        "float64": pa.float64(),
        "string": pa.string(),
        "bool": pa.bool_(),
        "list<int32>": pa.list_(pa.int32()),
        "list<string>": pa.list_(pa.string()),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }


_SQL_TYPES: dict[str, str] = {
    "int32": "INTEGER",
    "int64": "BIGINT",
    "uint64": "UBIGINT",
    "float64": "DOUBLE",
    "string": "VARCHAR",
    "bool": "BOOLEAN",
    "list<int32>": "INTEGER[]",
    "list<string>": "VARCHAR[]",
    "timestamp": "TIMESTAMPTZ",
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str
    unit: str = ""
    display: str = ""  # spreadsheet header (marts); the column name where empty

    @property
    def arrow_type(self) -> pa.DataType:
        return _arrow_types()[self.type]

    @property
    def sql_type(self) -> str:
        """The column's DuckDB type."""
        return _SQL_TYPES[self.type]


@dataclass(frozen=True)
class Contract:
    name: str
    layer: str
    description: str
    grain: str
    sources: str
    columns: tuple[Column, ...]
    # grain columns in which NULL is a value ("none"): their rows are still unique with the
    # NULL as one more value, where every other grain column must not be NULL
    grain_nullable: str = ""

    @property
    def grain_columns(self) -> list[str]:
        """The grain's columns as the table's rows hold them: ``run_id``, the partition of
        every table, is left out (one build writes one run)."""
        return [c for c in _names(self.grain) if c != "run_id"]

    @property
    def grain_nullable_columns(self) -> list[str]:
        return _names(self.grain_nullable)

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.arrow_type) for c in self.columns])

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


def _load(path: Path) -> Contract:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    cols = tuple(
        Column(
            name=c["name"],
            type=c["type"],
            description=c.get("description", ""),
            unit=c.get("unit", ""),
            display=c.get("display", ""),
        )
        for c in data["columns"]
    )
    return Contract(
        name=data["name"],
        layer=data["layer"],
        description=data["description"],
        grain=data["grain"],
        sources=data.get("sources", ""),
        columns=cols,
        grain_nullable=data.get("grain_nullable", ""),
    )


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


@cache
def contracts(layer: str) -> dict[str, Contract]:
    """Every contract of a layer (``raw`` or ``marts``), by table name."""
    out = {}
    for path in sorted(folder(SCHEMAS_DIR, layer).glob("*.toml")):
        c = _load(path)
        out[c.name] = c
    return out


def names(layer: str) -> list[str]:
    """The tables of a layer, sorted, without reading their contracts (each file is named
    after its table)."""
    return sorted(p.stem for p in folder(SCHEMAS_DIR, layer).glob("*.toml"))


_NAME = re.compile(r"[a-z][a-z0-9_]*")


@cache
def _one(layer: str, table: str) -> Contract | None:
    """The contract in ``<layer>/<table>.toml`` alone (a reader that needs a few tables does
    not parse every file); None when there is no such file."""
    path = folder(SCHEMAS_DIR, layer) / f"{table}.toml"
    if not _NAME.fullmatch(table) or not path.is_file():
        return None
    c = _load(path)
    return c if c.name == table else None


def contract(layer: str, table: str) -> Contract:
    c = _one(layer, table)
    if c is not None:
        return c
    try:
        return contracts(layer)[table]
    except KeyError:
        known = ", ".join(sorted(contracts(layer)))
        raise UnknownTable(f"no {layer} table named {table!r}; known: {known}") from None


RAW_TABLES = (
    "devices",
    "api_calls",
    "task_states",
    "task_runs",
    "task_ops",
    "pmu_counters",
    "task_metrics",
    "inferences",
    "step_trace",
    "freq_samples",
    "api_totals",
    "step_times",
    "ingest_issues",
)
