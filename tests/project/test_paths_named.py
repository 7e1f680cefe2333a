"""Every file of the project that the code, SQL headers, contracts or docs name by its path
exists: a module moved or renamed leaves no comment or page pointing at where it was."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("pipeline", "sql", "tests", "docs", "bench", "schemas", "data")
PATH = re.compile(r"(?<![\w/.])((?:" + "|".join(FOLDERS) + r")/[\w./-]*\w\.(?:py|sql|md|toml|j2))\b")
NAMING = (".py", ".md", ".sql", ".toml", ".j2")
# bench/HISTORY.md tells what was measured then, under the names of then; the wheel's test
# names the files of the copy of tests/ it writes outside the checkout
NOT_CHECKED = {"bench/HISTORY.md", "tests/project/test_wheel.py"}


def named_paths():
    texts = [p for d in (*FOLDERS, ".ci") for p in (ROOT / d).rglob("*") if p.is_file()]
    texts = [p for p in texts if p.suffix in NAMING or p.parent.name == ".ci"]
    texts += [ROOT / "README.md", ROOT / "pyproject.toml"]
    for text in texts:
        rel = text.relative_to(ROOT).as_posix()
        if rel in NOT_CHECKED:
            continue
        for found in PATH.finditer(text.read_text(encoding="utf-8", errors="replace")):
            yield rel, found.group(1)


def test_every_named_path_exists():
    missing = sorted({f"{where}: {path}" for where, path in named_paths() if not (ROOT / path).exists()})
    assert not missing, "paths named that do not exist:\n" + "\n".join(missing)


def test_the_scan_finds_paths():
    named = {path for _, path in named_paths()}
    assert {"pipeline/warehouse/store.py", "docs/architecture.md"} <= named
