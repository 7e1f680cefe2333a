"""Where the project's non-Python files live (the package is installed editable)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SQL_DIR = ROOT / "sql"
SCHEMAS_DIR = ROOT / "schemas"
