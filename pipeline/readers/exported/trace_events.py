"""The events of a Chrome-trace JSON file, one at a time, read in bounded chunks.

A trace is a JSON list of events, or an object whose ``traceEvents`` member is that list.
Exported timelines reach hundreds of megabytes, and ``json.loads`` of a whole file needs
several times its size in memory; here the file is read ``CHUNK_BYTES`` at a time and each
event is decoded from the text held so far (``JSONDecoder.raw_decode``), so memory stays at
about a chunk whatever the file size. The whole document is still checked: text that is not
UTF-8 or not JSON, a document that is no trace, or anything after it, raises ``TraceError``
with the byte offset where the problem starts.

Numbers with a fraction or exponent are kept as their text (``parse_float=str``), so times
can be converted exactly later.

Why not a streaming JSON library (ijson with its C backend, measured in bench/HISTORY.md): it
was no faster overall (slower on msprof timelines full of decimal times, faster on
torch_npu's), its errors name no byte offset, which an ``ingest_issues`` row needs, and it
turns decimals into ``Decimal`` values whose text differs from the file's (``1E+3``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from pipeline.readers.exported.context import open_measured

CHUNK_BYTES = 16 << 20
MAX_EVENT_BYTES = 64 << 20  # an event larger than this is taken for a broken file
COMPACT_CHARS = 1 << 20  # consumed text is dropped once it is this long and half the buffer
_SPACE = re.compile(r"[ \t\r\n]*")
_NUMBER_TAIL = re.compile(r"[0-9.eE+-]*")
_DECODER = json.JSONDecoder(parse_float=str)


class TraceError(Exception):
    """The file is not a readable Chrome trace; ``offset`` is the byte where that shows."""

    def __init__(self, message: str, offset: int | None = None):
        super().__init__(message)
        self.offset = offset


def trace_events(path: Path, chunk_bytes: int = CHUNK_BYTES, size: int | None = None) -> Iterator[object]:
    """Every entry of the file's event list, in file order (normally dicts; anything else is
    yielded as it is, for the caller to count). With ``size``, the file is read up to that many
    bytes (the size measured when the dump was scanned), never further."""
    with open_measured(path, size) as fh:
        yield from _Scanner(fh, chunk_bytes).events()


class _Scanner:
    def __init__(self, fh, chunk_bytes: int):
        self.fh, self.chunk_bytes = fh, chunk_bytes
        self.text = ""  # decoded text not yet consumed past ``pos``
        self.pos = 0
        self.base = 0  # byte offset of text[0] in the file
        self.read_bytes = 0  # bytes read from the file so far
        self.pending = b""  # the start of a UTF-8 character cut by the chunk boundary
        self.eof = False
        while not self.text and self._more():
            pass
        if self.text.startswith("\ufeff"):
            self.text = self.text[1:]
            self.base = 3

    # --- buffer ----------------------------------------------------------------------------

    def _more(self) -> bool:
        """Append the next chunk of text; False at the end of the file."""
        if self.eof:
            return False
        data = self.fh.read(self.chunk_bytes)
        start = self.read_bytes - len(self.pending)
        self.read_bytes += len(data)
        if not data:
            self.eof = True
            if self.pending:
                raise TraceError("not UTF-8 text (the file ends inside a character)", start)
            return False
        data = self.pending + data
        cut = _complete_utf8(data)
        self.pending = data[cut:]
        try:
            new = data[:cut].decode("utf-8")
        except UnicodeDecodeError as e:
            raise TraceError(f"not UTF-8 text ({e.reason})", start + e.start) from None
        self._compact()
        self.text += new
        return True

    def _compact(self) -> None:
        if self.pos > COMPACT_CHARS and self.pos * 2 > len(self.text):
            self.base = self.offset(self.pos)
            self.text = self.text[self.pos :]
            self.pos = 0

    def offset(self, pos: int) -> int:
        """Byte offset in the file of ``text[pos]``."""
        done = self.text[:pos]
        return self.base + (len(done) if done.isascii() else len(done.encode("utf-8")))

    def _space(self) -> str:
        """Skip white space; the next character, '' at the end of the file."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self._more():
                return ""

    def _expect(self, chars: str, what: str) -> str:
        c = self._space()
        if c == "" or c not in chars:
            raise TraceError(
                f"not valid JSON (expected {what}; a truncated file ends this way)", self.offset(self.pos)
            )
        self.pos += 1
        return c

    def _value(self):
        """The JSON value at ``pos`` (reading more text while it may be cut by the chunk end)."""
        self._space()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as e:
                if not self.eof and len(self.text) - self.pos < MAX_EVENT_BYTES and self._more():
                    continue
                raise TraceError(
                    f"not valid JSON ({e.msg}; a truncated file ends this way)", self.offset(e.pos)
                ) from None
            except RecursionError:
                raise TraceError("JSON nested too deeply", self.offset(self.pos)) from None
            if _NUMBER_TAIL.fullmatch(self.text, end) and self._more():
                continue  # a number may go on in the next chunk
            self.pos = end
            return value

    # --- document --------------------------------------------------------------------------

    def events(self) -> Iterator[object]:
        c = self._space()
        if c == "[":
            self.pos += 1
            yield from self._array()
        elif c == "{":
            self.pos += 1
            found = False
            if self._space() == "}":
                self.pos += 1
            else:
                while True:
                    key = self._value()
                    self._expect(":", "':'")
                    if key == "traceEvents" and not found and self._space() == "[":
                        self.pos += 1
                        found = True
                        yield from self._array()
                    else:
                        self._value()
                    if self._expect(",}", "',' or '}'") == "}":
                        break
            if not found:
                raise TraceError(
                    "JSON but not a Chrome trace (neither an event list nor an object with traceEvents)", 0
                )
        else:
            self._value()  # a JSON error, or a scalar document
            raise TraceError(
                "JSON but not a Chrome trace (neither an event list nor an object with traceEvents)", 0
            )
        if self._space() != "":
            raise TraceError("not valid JSON (extra data after the document)", self.offset(self.pos))

    def _array(self) -> Iterator[object]:
        if self._space() == "]":
            self.pos += 1
            return
        while True:
            yield self._value()
            if self._expect(",]", "',' or ']'") == "]":
                return


def _complete_utf8(data: bytes) -> int:
    """Length of ``data`` without a UTF-8 character cut at its end."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b < 0x80:
            return len(data)
        if b >= 0xC0:  # a lead byte: is its character complete?
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return len(data) if back >= need else len(data) - back
    return len(data)
