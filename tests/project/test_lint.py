"""The Python of the project passes its linter and is formatted by its formatter (ruff), and the SQL of
sql/ passes sqlfluff (its DuckDB dialect; both configured in pyproject.toml): a change that breaks any
of them fails here, with the tool's own list of what to fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("pipeline", "tests", "bench")


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(command):
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *FOLDERS], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_sqlfluff():
    # lint runs every rule of the configuration, the layout rules that `sqlfluff fix sql` applies
    # among them: a file fails here both when it breaks a rule and when it is not formatted
    done = subprocess.run(
        [sys.executable, "-m", "sqlfluff", "lint", "--processes", "2", "--disable-progress-bar", "sql"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, "`sqlfluff fix sql` fixes what it can:\n" + done.stdout + done.stderr
