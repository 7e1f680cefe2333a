"""pyproject.toml ships every package and every SQL file and contract (tests/project/test_wheel.py builds
and installs the wheel itself; this is the quick check of the same list)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folder(package: str) -> Path:
    """Where a package's files are, by pyproject's package-dir (the longest mapped prefix)."""
    mapped = {k: v for k, v in SETUPTOOLS.get("package-dir", {}).items() if k}
    for name in sorted(mapped, key=len, reverse=True):
        if package == name or package.startswith(name + "."):
            return REPO / mapped[name] / Path(*package[len(name) :].split(".")[1:])
    return REPO / Path(*package.split("."))


def test_every_code_folder_and_resource_folder_is_a_listed_package():
    code = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "pipeline").rglob("__init__.py")}
    resources = {
        "pipeline." + ".".join(d.relative_to(REPO).parts)
        for top in ("sql", "schemas")
        for d in [REPO / top, *(REPO / top).rglob("*")]
        if d.is_dir() and d.name != "__pycache__"
    }
    # (a data folder of the package, such as pipeline/templates, is a package too: setuptools
    # warns, and will refuse, when package data lies in a folder that is not listed)
    data = {"pipeline.templates"}
    assert sorted(SETUPTOOLS["packages"]) == sorted(code | resources | data)
    for package in SETUPTOOLS["packages"]:
        assert _folder(package).is_dir(), package


def test_every_sql_file_and_contract_is_package_data():
    shipped = set()
    for package, patterns in SETUPTOOLS["package-data"].items():
        base = _folder(package)
        for f in base.rglob("*"):
            rel = f.relative_to(base).as_posix()
            if any(fnmatch.fnmatch(rel, p) and rel.count("/") == p.count("/") for p in patterns):
                shipped.add(f)
    wanted = {
        f for top in ("sql", "schemas") for f in (REPO / top).rglob("*") if f.suffix in (".sql", ".toml")
    }
    assert wanted and sorted(wanted - shipped) == []


def test_report_templates_are_package_data():
    patterns = SETUPTOOLS["package-data"].get("pipeline.templates", [])
    templates = sorted((REPO / "pipeline" / "templates").glob("*.j2"))
    assert templates
    for t in templates:
        rel = t.relative_to(REPO / "pipeline" / "templates").as_posix()
        assert any(fnmatch.fnmatch(rel, p) for p in patterns), rel


def test_the_test_extra_is_bounded_to_the_major_versions_the_suite_passes_with():
    """A newcomer's `pip install -e '.[test]'` takes the newest releases the bounds allow: an
    unbounded test tool (pytest 9 changed pytest.approx) breaks the suite on a fresh machine."""
    from packaging.requirements import Requirement

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    tools = [Requirement(r) for r in extras["test"] if not r.startswith("profetl")]
    assert {t.name for t in tools} >= {"pytest", "pytest-xdist", "hypothesis"}
    for tool in tools:
        assert any(s.operator == "<" for s in tool.specifier), f"{tool} has no upper bound"
        assert any(s.operator == ">=" for s in tool.specifier), f"{tool} has no lower bound"
