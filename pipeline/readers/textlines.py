"""Line-oriented text files (hash dictionaries, MindSpore task descriptions): every line is
either parsed or reported, with its bytes, so text files are accounted like binary ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pipeline.readers.issues import Issue, IssueLog

T = TypeVar("T")


def parse_lines(
    raw: bytes,
    parse: Callable[[bytes], T | None],
    log: IssueLog,
    rel: str,
    device_id: int | None,
    kind: str,
    expected: str,
) -> list[tuple[int, T]]:
    """``(line number, parse(line))`` for every line ``parse`` accepts (it returns None for
    a line it does not); blank lines are fine, the others one issue with their bytes."""
    out: list[tuple[int, T]] = []
    offset, bad, bad_bytes, first_bad = 0, 0, 0, None
    for i, line in enumerate(raw.splitlines(keepends=True)):
        value = parse(line.rstrip(b"\r\n"))
        if value is not None:
            out.append((i, value))
        elif line.strip():
            bad += 1
            bad_bytes += len(line)
            first_bad = offset if first_bad is None else first_bad
        offset += len(line)
    log.decoded(len(raw) - bad_bytes)
    if bad:
        log.add(
            Issue(
                rel,
                kind,
                f"{bad} line(s) are not {expected} and were skipped",
                device_id=device_id,
                byte_offset=first_bad,
                byte_length=bad_bytes,
                count=bad,
            )
        )
    return out
