"""A run's tags and software versions where the outputs show run metadata: the report's run
table, the site's lineage of a change, terminal cells, and the CSV / JSON of a map column."""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa

from pipeline.outputs.cells import cell
from pipeline.outputs.formats import write_batches
from pipeline.outputs.html_report import _meta
from pipeline.outputs.site import lineage_diff

TAGS = [("commit", "3f2a9c1"), ("model_version", "v7")]  # a map as Arrow gives it


def test_the_report_lists_the_versions_and_tags():
    run = {
        "run_id": "r1",
        "cann_version": "8.0.RC1",
        "driver_version": "467734",
        "framework_version": "torch_npu 2.7.1",
        "tags": TAGS,
    }
    meta = dict(_meta(run))
    assert meta["CANN"] == "8.0.RC1"
    assert meta["Driver"] == "467734"
    assert meta["Framework"] == "torch_npu 2.7.1"
    assert meta["Tags"] == "commit=3f2a9c1,model_version=v7"  # as the terminal shows them
    old = dict(_meta({"run_id": "r0", "tags": None}))  # a run recorded before either was kept
    assert old["CANN"] == old["Driver"] == old["Framework"] == old["Tags"] == "N/A"


def test_the_site_names_a_changed_tag_and_version_as_lineage():
    before = {"tags": dict(TAGS), "cann_version": "8.0.RC1", "chip": "Ascend910B"}
    after = {
        "tags": {"commit": "9d8e7f6", "model_version": "v7"},
        "cann_version": "8.0.RC2",
        "chip": "Ascend910B",
    }
    diff = lineage_diff(before, after, ["tags", "cann_version", "chip"])
    assert diff == [
        ("tags", "commit=3f2a9c1, model_version=v7", "commit=9d8e7f6, model_version=v7"),
        ("cann_version", "8.0.RC1", "8.0.RC2"),
    ]


def test_a_terminal_cell_of_tags():
    assert cell(TAGS) == "commit=3f2a9c1,model_version=v7"
    assert cell([1, 2]) == "1,2"


def _written(fmt: str, tmp_path) -> str:
    t = pa.table({"tags": pa.array([dict(TAGS), None, {}], pa.map_(pa.string(), pa.string()))})
    out = tmp_path / f"out.{fmt}"
    write_batches(t.to_batches(), t.schema, fmt, str(out))
    return out.read_text()


def test_a_map_column_is_an_object_in_json_lines_and_csv(tmp_path):
    lines = [json.loads(x) for x in _written("json", tmp_path).splitlines()]
    assert lines == [{"tags": dict(TAGS)}, {"tags": None}, {"tags": {}}]
    rows = list(csv.DictReader(io.StringIO(_written("csv", tmp_path))))
    assert json.loads(rows[0]["tags"]) == dict(TAGS)
    assert rows[1]["tags"] == ""
    assert json.loads(rows[2]["tags"]) == {}
