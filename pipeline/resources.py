"""Where the project's non-Python files live: the SQL files (sql/) and the table contracts (schemas/).

They are top-level folders of the repository. A wheel ships them inside the package, as
pipeline/sql and pipeline/schemas (pyproject.toml maps them there); an editable install or a
checkout on PYTHONPATH reads them beside the package, in the repository. The package's own
copy wins where there is one.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import PipelineError

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent  # the repository, in a checkout; site-packages, in an installed wheel


def _folder(name: str) -> Path:
    shipped = PACKAGE / name
    return shipped if shipped.is_dir() else ROOT / name


SQL_DIR = _folder("sql")
SCHEMAS_DIR = _folder("schemas")


def folder(base: Path, layer: str) -> Path:
    """``base/layer`` (e.g. SQL_DIR, "marts"). Without ``base`` the install is broken, and says
    so rather than building no tables."""
    if not base.is_dir():
        raise PipelineError(
            f"profetl is installed without its {base.name}/ files (no {PACKAGE / base.name} "
            f"nor {ROOT / base.name}); reinstall it (pip install profetl-*.whl, "
            "or pip install -e . in a checkout)"
        )
    return base / layer
