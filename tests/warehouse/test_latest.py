"""``latest`` is the run collected last: back-filling older nights does not move it."""

from __future__ import annotations

from typer.testing import CliRunner

from pipeline.cli.main import app
from tests.helpers.history import DAY_US, START_US, build_history


def test_latest_is_the_run_collected_last_after_a_back_fill(tmp_path):
    # ingested in this order: the newest night first, then two older nights back-filled
    wh, nights = build_history(
        tmp_path,
        [
            {"seed": 1, "start_us": START_US + 9 * DAY_US},
            {"seed": 1, "start_us": START_US + 7 * DAY_US},
            {"seed": 1, "start_us": START_US + 8 * DAY_US},
        ],
    )
    assert wh.run_index().resolve_run("latest")["run_id"] == nights[0].run_id
    r = CliRunner().invoke(app, ["compare", "latest", "--last", "2", "--warehouse", str(wh.path), "--json"])
    assert r.exit_code in (0, 4), r.output  # a baseline of the two older nights, not a usage error
    r = CliRunner().invoke(app, ["show", "--warehouse", str(wh.path)])
    assert r.exit_code == 0 and nights[0].run_id in r.stdout
