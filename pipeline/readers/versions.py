"""What a collection recorded of its software: the CANN, driver and framework versions, read
from the texts of a dump's control files (``reader.identity``: the same texts ``metadata_json``
keeps), whatever the layout (docs/formats.md#software-versions).

- ``info.json`` / ``info.json.<N>`` (PROF_* trees, hiprof result_dirs, msprof exports that kept
  them): ``cannVersion`` (text) and ``drvVersion`` (a number, kept in decimal).
- ``profiler_info.json`` / ``profiler_info_<rank>.json`` (torch_npu's output folder):
  ``cann_version`` and ``torch_npu_version`` (the framework: ``torch_npu <version>``).

No control file of any layout records the firmware's version. A field absent, empty or not
text is NULL; when several files record different values (devices of one run), the distinct
values are kept in the files' name order, joined by ", ", so that a mismatch shows.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

COLUMNS = ("cann_version", "driver_version", "framework_version")

_INFO = re.compile(r"^info\.json(?:\.\d+)?$")
_PROFILER_INFO = re.compile(r"^profiler_info(?:_\d+)?\.json$")


def _load(text: str) -> dict:
    """A control file's JSON object; msprof's own reader parses only the first line of
    info.json, so a file whose whole text is not JSON is tried by its first line. {} when
    neither is an object."""
    for candidate in (text, text.split("\n", 1)[0]):
        try:
            obj = json.loads(candidate)
        except (ValueError, RecursionError):  # (nested deeper than the parser goes: not read)
            continue
        return obj if isinstance(obj, dict) else {}
    return {}


def _text(value) -> str | None:
    """A recorded value as text: strings stripped, whole numbers as written; None when empty,
    absent or of another kind (a list, an object, a boolean)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        value = value.strip()
        return value if value and value.upper() not in ("NA", "N/A", "NONE", "NULL") else None
    return None


def _driver(value) -> int | None:
    """``drvVersion``: a whole number 0 to 2^32 - 1 (as a number or digits); else None, as the
    metadata reader takes one out of range (docs/formats.md#control-ranges)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value < 2**32 else None


def _found(texts: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {c: [] for c in COLUMNS}
    for name in sorted(texts):
        base = PurePosixPath(name).name
        if _INFO.match(base):
            d = _load(texts[name])
            pairs = (("cann_version", d.get("cannVersion")), ("driver_version", _driver(d.get("drvVersion"))))
        elif _PROFILER_INFO.match(base):
            d = _load(texts[name])
            fw = _text(d.get("torch_npu_version"))
            pairs = (("cann_version", d.get("cann_version")), ("framework_version", fw and f"torch_npu {fw}"))
        else:
            continue
        for column, value in pairs:
            v = _text(value)
            if v is not None and v not in out[column]:
                out[column].append(v)
    return out


def software_versions(texts: dict[str, str]) -> dict[str, str | None]:
    """``{cann_version, driver_version, framework_version}`` from the control files' texts
    (name in the dump -> text); a version no file records is None."""
    return {c: ", ".join(v) if v else None for c, v in _found(texts).items()}


def from_metadata_json(metadata_json: str | None) -> dict[str, str | None]:
    """``software_versions`` of a run's recorded control files (its ``metadata_json``): how a
    run recorded before profetl read versions gets them when it is recorded again."""
    try:
        texts = json.loads(metadata_json or "{}")
    except ValueError:
        texts = {}
    if not isinstance(texts, dict):
        texts = {}
    return software_versions({k: v for k, v in texts.items() if isinstance(v, str)})
