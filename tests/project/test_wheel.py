"""The wheel is a working profetl: built from the sources, installed (not editable) into a fresh
virtual environment outside the checkout, it runs the sample and passes the ingest and build
tests, importing nothing from the checkout.

Marked ``wheel``: the default test run leaves it out (it installs the dependencies from the
package index, ~1 minute); CI runs it with ``python3 -m pytest -q -m wheel``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.wheel, pytest.mark.slow]  # slow too: `-m "not slow"` replaces addopts' -m

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "pipeline", "sql", "schemas")  # what building the wheel reads
TESTS_RUN = (
    "sql/test_golden.py",
    "cli/test_cli.py",
)  # every mart of data/sample against its golden; the commands

# Written beside the copied tests: the tests ran against the wheel, not a checkout.
LOCATION_TEST = """
import json, os
from importlib.metadata import distribution
from pathlib import Path

import pipeline
from pipeline import resources


def test_profetl_is_the_installed_wheel():
    env = Path(os.environ["PROFETL_WHEEL_VENV"]).resolve()
    for path in (pipeline.__file__, resources.SQL_DIR, resources.SCHEMAS_DIR):
        assert Path(path).resolve().is_relative_to(env), f"{path} is not in {env}"
    assert resources.SQL_DIR == Path(pipeline.__file__).resolve().parent / "sql"
    direct_url = json.loads(distribution("profetl").read_text("direct_url.json") or "{}")
    assert not direct_url.get("dir_info", {}).get("editable"), direct_url
"""


def _run(args, **kwargs) -> subprocess.CompletedProcess:
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert p.returncode == 0, (
        f"{' '.join(map(str, args))} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    )
    return p


def _copy(names, source: Path, target: Path) -> None:
    target.mkdir()
    for name in names:
        if (source / name).is_dir():
            shutil.copytree(
                source / name, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            shutil.copy2(source / name, target / name)


def test_the_wheel_installed_outside_the_checkout_ingests_and_builds(tmp_path):
    assert not tmp_path.resolve().is_relative_to(REPO)
    # build from a copy of the sources: nothing is written into the checkout (build/, *.egg-info)
    src = tmp_path / "src"
    _copy(SOURCES, REPO, src)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp_path / "dist", src])
    (wheel,) = (tmp_path / "dist").glob("profetl-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    resources = [
        f"pipeline/{p.relative_to(REPO).as_posix()}"
        for d in ("sql", "schemas")
        for p in sorted((REPO / d).rglob("*"))
        if p.suffix in (".sql", ".toml")
    ]
    assert resources and not [r for r in resources if r not in shipped], sorted(set(resources) - shipped)
    templates = [
        f"pipeline/{p.relative_to(REPO / 'pipeline').as_posix()}"
        for p in sorted((REPO / "pipeline" / "templates").glob("*.j2"))
    ]
    assert templates and not [t for t in templates if t not in shipped], templates  # profetl report's

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python, profetl = env_dir / "bin" / "python", env_dir / "bin" / "profetl"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PROFETL_WAREHOUSE")}
    env["PROFETL_WHEEL_VENV"] = str(env_dir)
    _run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[test]"], env=env)

    # the tests and the sample, outside the checkout: `import pipeline` can only find the wheel
    work = tmp_path / "work"
    _copy(("tests", "data", "README.md"), REPO, work)
    (work / "tests" / "test_wheel_location.py").write_text(LOCATION_TEST)

    p = _run([profetl, "run", "data/sample", "--show", "--warehouse", tmp_path / "wh"], cwd=work, env=env)
    assert p.stdout.startswith("built") and "1 dump(s): 1 done, 0 failed" in p.stdout, p.stdout
    assert "Task Scheduler" in p.stdout and "AI Core" in p.stdout, p.stdout

    tests = ["tests/test_wheel_location.py", *(f"tests/{name}" for name in TESTS_RUN)]
    p = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=work, env=env)
    assert " passed" in p.stdout, p.stdout[-2000:]
