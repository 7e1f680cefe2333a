"""Paths as text for tables and messages: bytes that are not UTF-8 become \\x escapes."""

from __future__ import annotations

import os
from pathlib import Path


def display(p: Path | str) -> str:
    """``p`` as printable UTF-8 text, whatever bytes its name holds."""
    return os.fsencode(p).decode("utf-8", "backslashreplace")


def relative(root: Path, p: Path) -> str:
    """``p`` relative to ``root``, POSIX style, as printable text."""
    return display(p.relative_to(root).as_posix())


# A dump's tags file (pipeline/jobs/tags.py): beside the dump's data, read by the jobs, never by
# a reader (no reader reports it as a file it does not know, no fingerprint counts it)
TAGS_FILE = "profetl-tags.toml"
