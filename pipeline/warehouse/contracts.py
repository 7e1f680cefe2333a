"""Table contracts: ``schemas/<layer>/<table>.toml`` read into Arrow schemas.

A raw table's contract says all there is of it: what one row is (``description``), its
grain, where its rows come from (``sources``) and every column with its type, unit and
meaning. A mart's contract says only what the header of its SQL file (sql/marts/<mart>.sql,
the one source of its description, sources and column meanings) cannot: the grain as the
build audits it, and each column's type, unit and spreadsheet header (``display``); the
docs take the rest from the header, and tests/sql/test_sql_files.py checks that the two
name the same columns, units and grain. Readers write raw tables through these schemas, the
build checks every mart against its contract.

Each file is read through a pydantic model that forbids keys it does not know, so a key
misspelt, or one that nothing reads, fails loudly (ContractInvalid) instead of being
ignored.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.errors import ContractInvalid, UnknownTable
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
        "map<string,string>": pa.map_(pa.string(), pa.string()),
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
    "map<string,string>": "MAP(VARCHAR, VARCHAR)",
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str  # a raw column's; "" for a mart's (its SQL header's Columns:)
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
    description: str  # a raw table's; "" for a mart (its SQL header's first line says it)
    grain: str
    sources: str  # a raw table's; "" for a mart (its SQL header's Sources:)
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


ColumnType = Literal[tuple(_SQL_TYPES)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RawColumnFile(_Strict):
    """A column of a raw table's contract."""

    name: str
    type: ColumnType
    description: str = ""
    unit: str = ""


class MartColumnFile(_Strict):
    """A column of a mart's contract: its meaning is in the SQL header."""

    name: str
    type: ColumnType
    unit: str = ""
    display: str = ""


class RawContractFile(_Strict):
    """``schemas/raw/<table>.toml``."""

    name: str
    layer: Literal["raw"]
    description: str
    grain: str
    sources: str = ""
    columns: list[RawColumnFile]


class MartContractFile(_Strict):
    """``schemas/marts/<mart>.toml``: description and sources are the SQL header's."""

    name: str
    layer: Literal["marts"]
    grain: str
    grain_nullable: str = ""
    columns: list[MartColumnFile]


_MODELS: dict[str, type[RawContractFile] | type[MartContractFile]] = {
    "raw": RawContractFile,
    "marts": MartContractFile,
}


def _load(path: Path) -> Contract:
    """The contract in ``path``; ContractInvalid naming the file and each key that is
    unknown, missing or of the wrong kind."""
    where = f"schemas/{path.parent.name}/{path.name}"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ContractInvalid(f"{where}: not TOML: {e}") from None
    model = _MODELS.get(path.parent.name)
    if model is None:
        raise ContractInvalid(f"{where}: no contracts in a folder {path.parent.name!r}")
    try:
        f = model.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(file)'}: {err['msg']}" for err in e.errors()
        )
        raise ContractInvalid(f"{where}: {problems}") from None
    cols = tuple(
        Column(
            name=c.name,
            type=c.type,
            description=getattr(c, "description", ""),
            unit=c.unit,
            display=getattr(c, "display", ""),
        )
        for c in f.columns
    )
    return Contract(
        name=f.name,
        layer=f.layer,
        description=getattr(f, "description", ""),
        grain=f.grain,
        sources=getattr(f, "sources", ""),
        columns=cols,
        grain_nullable=getattr(f, "grain_nullable", ""),
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
    "comm_ops",
    "comm_tasks",
    "aicpu_tasks",
    "ingest_issues",
)
