"""Contract files are read through pydantic models that forbid unknown keys: a key misspelt or
read by nothing fails loudly, naming the file and the key; a mart's contract holds no
description, sources or column meanings (its SQL header does)."""

from __future__ import annotations

import pytest

from pipeline.errors import ContractInvalid
from pipeline.warehouse.contracts import RAW_TABLES, _load, contracts, names

MART = """name = "m"
layer = "marts"
grain = "run_id, device_id"

[[columns]]
name = "device_id"
type = "int32"
display = "Device_id"

[[columns]]
name = "time_ns"
type = "int64"
unit = "ns"
"""

RAW = """name = "r"
layer = "raw"
description = "One row per thing."
grain = "run_id, device_id, seq"
sources = "some files"

[[columns]]
name = "device_id"
type = "int32"
description = ""

[[columns]]
name = "seq"
type = "int64"
description = "record index"
"""


def _write(tmp_path, layer: str, text: str):
    folder = tmp_path / layer
    folder.mkdir(exist_ok=True)
    path = folder / "t.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_shipped_contract_loads():
    assert sorted(contracts("raw")) == names("raw")
    assert set(RAW_TABLES) < set(contracts("raw"))
    assert sorted(contracts("marts")) == names("marts")
    for c in contracts("marts").values():
        assert not c.description and not c.sources
        assert all(not col.description for col in c.columns)


def test_well_formed_contracts_read_as_written(tmp_path):
    m = _load(_write(tmp_path, "marts", MART))
    assert (m.name, m.layer, m.grain_columns, m.grain_nullable_columns) == ("m", "marts", ["device_id"], [])
    assert [(c.name, c.type, c.unit, c.display) for c in m.columns] == [
        ("device_id", "int32", "", "Device_id"),
        ("time_ns", "int64", "ns", ""),
    ]
    r = _load(_write(tmp_path, "raw", RAW))
    assert (r.description, r.sources) == ("One row per thing.", "some files")
    assert [(c.name, c.description) for c in r.columns] == [("device_id", ""), ("seq", "record index")]


@pytest.mark.parametrize(
    ("layer", "text", "named"),
    [
        # the key nothing read, once in most contracts
        (
            "marts",
            MART.replace('grain = "run_id, device_id"', 'grain = "run_id, device_id"\npartition = "run_id"'),
            "partition",
        ),
        (
            "raw",
            RAW.replace('sources = "some files"', 'sources = "some files"\npartition = "run_id"'),
            "partition",
        ),
        # a mart's description and sources are its SQL header's
        ("marts", 'description = "x"\n' + MART, "description"),
        ("marts", 'sources = "stg_x"\n' + MART, "sources"),
        # column keys: a misspelt one, a meaning in a mart's contract
        ("marts", MART.replace('unit = "ns"', 'units = "ns"'), "columns.1.units"),
        ("marts", MART.replace('display = "Device_id"', 'description = "device"'), "columns.0.description"),
        ("raw", RAW.replace('description = "record index"', 'display = "Seq"'), "columns.1.display"),
    ],
)
def test_an_unknown_key_fails_loudly_naming_file_and_key(tmp_path, layer, text, named):
    path = _write(tmp_path, layer, text)
    with pytest.raises(ContractInvalid) as e:
        _load(path)
    message = str(e.value)
    assert message.startswith(f"schemas/{layer}/t.toml: ")
    assert f"{named}: Extra inputs are not permitted" in message


@pytest.mark.parametrize(
    ("layer", "text", "named"),
    [
        ("marts", MART.replace('grain = "run_id, device_id"\n', ""), "grain: Field required"),
        ("marts", MART.replace('type = "int64"', 'type = "int65"'), "columns.1.type: Input should be"),
        ("raw", RAW.replace('layer = "raw"', 'layer = "marts"'), "layer: Input should be 'raw'"),
        ("raw", RAW.replace('name = "r"', "name = 3"), "name: Input should be a valid string"),
        ("marts", "name = [", "not TOML"),
    ],
)
def test_a_missing_or_wrong_key_fails_naming_it(tmp_path, layer, text, named):
    with pytest.raises(ContractInvalid, match=f"^schemas/{layer}/t.toml: .*{named}"):
        _load(_write(tmp_path, layer, text))
