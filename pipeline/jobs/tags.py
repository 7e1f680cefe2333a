"""A run's tags: lineage given with it (a code commit, a model version, a team's build id), from
``--tag KEY=VALUE`` and from the dump's tags file (docs/formats.md#tags).

The tags file is ``profetl-tags.toml`` in the dump's root folder, for jobs that write one beside
their dump: a flat TOML table of text keys to text values. A tag given on the command line wins
over the file's tag of the same key. The file is not part of the dump's content: adding or
changing it does not make the dump a changed one (``pipeline.jobs.dumps``), it only changes the
run's tags.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pipeline.errors import TagsFileInvalid, UsageError
from pipeline.paths import TAGS_FILE, display

# a key as a column name or a TOML bare key is spelt: letters, digits, "_", "-", "." (commit,
# model_version, team.build-id)
KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
MAX_KEY, MAX_VALUE = 64, 1024


def _check(key: str, value: str) -> str | None:
    """Why ``key`` = ``value`` is not a tag, or None."""
    if not KEY.fullmatch(key) or len(key) > MAX_KEY:
        return (
            f"key {key[:MAX_KEY]!r} must be 1 to {MAX_KEY} letters, digits, '_', '-' or '.', "
            "not starting with '-' or '.'"
        )
    if len(value) > MAX_VALUE or any(ord(c) < 32 for c in value):
        return f"the value of {key!r} must be one line of at most {MAX_VALUE} characters"
    return None


def parse_tags(specs: list[str] | None) -> dict[str, str]:
    """``--tag KEY=VALUE`` options as a dict (a key given twice: the last wins); UsageError, one
    line, for one that is not KEY=VALUE with a valid key."""
    out: dict[str, str] = {}
    for spec in specs or []:
        key, sep, value = spec.partition("=")
        if not sep:
            raise UsageError(f"--tag {spec!r}: give KEY=VALUE, e.g. --tag commit=3f2a9c1")
        why = _check(key, value)
        if why:
            raise UsageError(f"--tag {spec!r}: {why}")
        out[key] = value
    return out


def read_tags_file(dump: Path) -> dict[str, str]:
    """The tags of ``dump``'s tags file ({} without one); TagsFileInvalid naming the file when
    it cannot be read, is not TOML, or is not a flat table of text to text."""
    f = Path(dump) / TAGS_FILE
    if not f.is_file():
        return {}
    name = display(f)
    try:
        data = tomllib.loads(f.read_text(encoding="utf-8"))
    except OSError as e:
        raise TagsFileInvalid(name, e.strerror or type(e).__name__) from None
    except UnicodeDecodeError:
        raise TagsFileInvalid(name, "it is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise TagsFileInvalid(name, f"not TOML: {(str(e).splitlines() or ['?'])[0]}") from None
    for key, value in data.items():
        if not isinstance(value, str):
            kind = "a table" if isinstance(value, dict) else type(value).__name__
            raise TagsFileInvalid(name, f"the value of {key!r} is {kind}, not a string")
        why = _check(key, value)
        if why:
            raise TagsFileInvalid(name, why)
    return dict(data)


def run_tags(dump: Path, cli: dict[str, str] | None) -> dict[str, str]:
    """The tags a run of ``dump`` is recorded with: its tags file's, then the command line's
    (which win on the same key); TagsFileInvalid naming the file when it is not one."""
    return {**read_tags_file(dump), **(cli or {})}
