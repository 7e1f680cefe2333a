"""``profetl synth --layout prof`` writes PROF_* trees that ``profetl run`` ingests and builds."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pipeline.cli.main import app
from pipeline.errors import InputError

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


def test_synth_prof_then_run(tmp_path):
    out, wh = tmp_path / "job", tmp_path / "wh"
    r = CliRunner().invoke(
        app,
        [
            "synth",
            "--layout",
            "prof",
            "--chip",
            "ascend310p",
            "--devices",
            "3",
            "--processes",
            "2",
            "--json",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    info = json.loads(r.output)
    assert (info["chip"], info["devices"], info["dump"]) == ("Ascend310P", 3, str(out))
    assert len(list(out.glob("PROF_*/device_*"))) == 3 and len(list(out.glob("PROF_*/host"))) == 2
    r = CliRunner().invoke(app, ["run", "-w", str(wh), str(out)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["runs", "-w", str(wh), "--json"])
    (run,) = json.loads(r.output)
    assert (run["chip"], run["layout"], run["devices"]) == ("Ascend310P", "msprof_job", [0, 1, 2])


def test_synth_prof_rejects_unknown_chip(tmp_path):
    r = CliRunner().invoke(app, ["synth", "--layout", "prof", "--chip", "ascend999", str(tmp_path / "x")])
    assert r.exit_code == 2 and "ascend910a" in r.output


def test_ingest_of_a_folder_holding_a_dump_names_it(tmp_path):
    # msprof's --output folder holds one PROF_* tree: not a dump itself, and the error says where the dump is
    out, wh = tmp_path / "msprof_output", tmp_path / "wh"
    r = CliRunner().invoke(
        app, ["synth", "--layout", "prof", "--chip", "ascend910b", "--devices", "1", str(out)]
    )
    assert r.exit_code == 0, r.output
    (prof,) = out.glob("PROF_*")
    r = CliRunner().invoke(app, ["ingest", "-w", str(wh), str(out)])
    assert r.exit_code == InputError.exit_code, r.output
    assert "holds 1" in r.output and prof.name in r.output and "profetl run" in r.output
    empty = tmp_path / "empty"
    empty.mkdir()
    r = CliRunner().invoke(app, ["ingest", "-w", str(wh), str(empty)])
    assert r.exit_code == InputError.exit_code and "is not a dump profetl can read" in r.output
