"""What profetl's terminal output does whatever prints it: control characters in data escaped,
and a standard output whose reader went away. Both consoles (``console``) and the plain
writers of ``common`` use it; it imports neither, so neither imports the other."""

from __future__ import annotations

import io
import os
import re
import sys

import typer

from pipeline.errors import ExitCode

# C0 and C1 control characters (but the newline of a message) and the bidirectional overrides:
# in names and paths from a dump they would move the cursor, recolour or reorder the terminal
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_OR_NEWLINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, newlines: bool = True) -> str:
    """``text`` with its control characters as ``\\xNN`` (``\\uNNNN``) escapes; ``newlines``
    False keeps line breaks (a message's own)."""
    return (_CONTROL_OR_NEWLINE if newlines else _CONTROL).sub(_escaped, text)


def pipe_closed() -> typer.Exit:
    """The reader of standard output went away (`profetl export ... | head`): stop quietly, as
    tools stopped by SIGPIPE do, with nothing left to flush into the closed pipe at exit."""
    detach_stdout()
    return typer.Exit(ExitCode.PIPE_CLOSED)


def detach_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):  # not a file (a test's capture)
        pass
