"""``profetl synth --layout prof`` writes PROF_* trees that ``profetl run`` ingests and builds."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pipeline.cli.main import app


def test_synth_prof_then_run(tmp_path):
    out, wh = tmp_path / "job", tmp_path / "wh"
    r = CliRunner().invoke(app, ["synth", "--layout", "prof", "--chip", "ascend310p", "--devices", "3",
                                 "--processes", "2", "--json", str(out)])
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
