"""The consoles profetl prints through (rich), in a module of their own: ``common`` loads it
when a command first prints, so a command that prints nothing through rich (``query
--format csv``, an error before any output) does not load rich at all."""

from __future__ import annotations

import sys

from rich.console import Console

from pipeline.cli.terminal import escape_controls, pipe_closed


class PlainConsole(Console):
    """A Console that prints text as text: no markup (a path holding ``[/b]`` or an op named
    ``Re[i]lu`` prints as it is), no emoji codes, no highlighting, and control characters
    escaped. Everything profetl prints holds data (names, paths, messages quoting them), so
    this is the only way it prints; styled output would be built from rich objects."""

    def __init__(self, **kw) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **kw)

    def print(self, *objects, **kw) -> None:
        objects = tuple(escape_controls(o, newlines=False) if isinstance(o, str) else o for o in objects)
        kw.pop("markup", None)
        super().print(*objects, markup=False, **kw)


class StdoutConsole(PlainConsole):
    """rich's Console for standard output, except when its reader goes away (`| head`): rich
    then exits with 1, wherever the write happens; profetl stops quietly with PIPE_CLOSED (141),
    as tools stopped by SIGPIPE do and as errors() does for other writers."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise pipe_closed()


def make(name: str) -> Console:
    """``out`` (standard output) or ``err`` (standard error)."""
    if name == "out":
        return StdoutConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 4000)
    return PlainConsole(stderr=True, soft_wrap=True)
