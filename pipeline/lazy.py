"""Modules imported on first use.

``pa = lazy("pyarrow")`` at the top of a module reads like an import, and loads pyarrow only
when an attribute of it is first looked up. A command that never reaches such a use (``query``
printing a table goes through DuckDB alone) then starts without loading the library: pyarrow
with numpy, pyarrow.compute and pyarrow.parquet take a tenth of a second or more of every
process that imports them. Attributes are looked up in the real module each time (nothing is
copied), so a module patched after the first use is seen as patched.
"""

from __future__ import annotations

import importlib
import sys


class LazyModule:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        module = sys.modules.get(self._name) or importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def lazy(name: str) -> LazyModule:
    return LazyModule(name)
