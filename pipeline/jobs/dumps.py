"""Finding dumps under a root, and what identifies one: its run id and content fingerprint.

A dump is scanned once (``scan_dump``) into a ``Dump``: its layout, every file with its size and
modification time, and its reader's own listing; identity, change detection, the progress total
and the read all take what they need from that one value.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from types import ModuleType

from pipeline.errors import InputError, MissingInput
from pipeline.paths import TAGS_FILE, display
from pipeline.readers import exported
from pipeline.readers.catalog import detect, reader_of
from pipeline.readers.identity import hash_edges


@dataclass(frozen=True)
class DumpFile:
    """A regular file of a dump as the scan measured it."""

    path: Path
    rel: str  # its name in the dump, POSIX style
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Dump:
    """A dump folder scanned once: its layout, its files, and its reader's listing of them."""

    path: Path
    layout: str
    files: tuple[DumpFile, ...]  # every regular file, links not followed, in name order

    @cached_property
    def reader(self) -> ModuleType:
        return reader_of(self.layout)

    @cached_property
    def scanned(self):
        """The dump as its reader lists it (``reader.scan``)."""
        return self.reader.scan(self.path, self.layout)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    def identity(self) -> tuple[int | None, dict[str, str]]:
        """The collection start and the texts that name the dump (``reader.identity``), read
        once per scan (a night reads it to schedule the dump, its ingest again)."""
        return self._identity

    @cached_property
    def _identity(self) -> tuple[int | None, dict[str, str]]:
        return self.reader.identity(self.scanned)

    def units(self) -> list:
        return self.reader.units(self.scanned)

    def fingerprint(self) -> str:
        """``<content key>:<stamp>`` (``fingerprint``) of the files as scanned, read once per
        scan (the content key reads the edges of every file)."""
        return self._fingerprint

    @cached_property
    def _fingerprint(self) -> str:
        return f"{_content_key(self.path, self.files)}:{_stamp_key(self.files)}"


def scan_dump(path: Path, layout: str | None = None) -> Dump | None:
    """``path`` as a ``Dump`` (its ``layout`` when the caller found it already), or None when it
    is not a dump profetl reads."""
    path = Path(path)
    layout = layout or detect(path)
    if layout is None:
        return None
    return Dump(path, layout, _listing(path))


def discover(root: Path, max_depth: int = 6, unreadable: list | None = None) -> list[Path]:
    """Every dump at or under ``root`` (``find_dumps``, without their layouts)."""
    return [path for path, _ in find_dumps(root, max_depth, unreadable)]


def find_dumps(root: Path, max_depth: int = 6, unreadable: list | None = None) -> list[tuple[Path, str]]:
    """Every dump at or under ``root``, with its layout; links are not followed, dumps are not searched inside but
    for a torch_npu rank folder, whose PROF_* folders that still hold raw data are dumps of their own.

    A folder that cannot be read (permission denied, gone meanwhile) is skipped, the others
    still searched; with ``unreadable``, each is appended to it as (path, reason)."""
    root = Path(root)
    if not root.exists():
        raise MissingInput(display(root))
    if not root.is_dir():
        raise InputError("is not a directory", path=display(root))
    found: list[tuple[Path, str]] = []

    def walk(d: Path, depth: int) -> None:
        try:
            layout = detect(d)
        except OSError as e:
            if unreadable is not None:
                unreadable.append((_unsearchable(d, e), e.strerror or str(e)))
            return
        if layout:
            found.append((d, layout))
            if layout == "torch_npu_export":  # and the PROF_* folders in it that keep raw data
                found.extend((p, detect(p)) for p in exported.nested_runs(exported.scan(d, layout)))
            return
        if depth >= max_depth:
            return
        try:
            children = sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError as e:
            if unreadable is not None:
                unreadable.append((_unsearchable(d, e), e.strerror or str(e)))
            return
        for c in children:
            if not exported.exports_of_raw(c):  # exports of the raw data found beside them: not a run
                walk(c, depth + 1)

    walk(root, 0)
    return found


def _unsearchable(d: Path, e: OSError) -> Path:
    """The folder that ``e``, met while looking into ``d``, says cannot be searched: the path it
    names when that is a folder whose listing failed, else that path's folder (looking at a
    name inside a folder that cannot be searched fails, and names the name)."""
    if not e.filename:
        return d
    p = Path(os.fsdecode(e.filename))
    try:
        os.stat(p)
        return p
    except OSError:
        return p.parent


def _listing(root: Path) -> tuple[DumpFile, ...]:
    """Every regular file of the dump but its tags file (``pipeline.jobs.tags``), which says
    what the run is, not what was collected: changing it is not a changed dump."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            if name == TAGS_FILE and Path(dirpath) == Path(root):
                continue
            p = Path(dirpath) / name
            try:
                st = p.lstat()
            except OSError:  # gone since the listing, or not searchable: the reader reports it
                continue
            if st.st_mode & 0o170000 == 0o100000:  # a regular file, not a link
                out.append(DumpFile(p, p.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
    return tuple(out)


def _regular_files(root: Path) -> list[Path]:
    return [f.path for f in _listing(root)]


def _content_key(root: Path, files: tuple[DumpFile, ...]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(os.fsencode(f.rel) + f"\0{f.size}\0".encode())
        hash_edges(h, f.path, f.size)
    return h.hexdigest()


def content_key(root: Path) -> str:
    """Names and sizes of every file, and its first and last 64 KiB: what tells one dump from
    another wherever it lies (a copy, a new mount, mtimes not kept). Cheap on large dumps;
    it changes when a slice is added, removed, truncated, or rewritten at either end."""
    return _content_key(Path(root), _listing(Path(root)))


def _stamp_key(files: tuple[DumpFile, ...]) -> str:
    """Names, sizes and modification times (ns) of every file."""
    h = hashlib.sha256()
    for f in files:
        h.update(os.fsencode(f.rel) + f"\0{f.size}\0{f.mtime_ns}\0".encode())
    return h.hexdigest()[:32]


def fingerprint(root: Path) -> str:
    """``<content_key>:<stamp>``: the dump's content key, then a hash of every file's name,
    size and modification time. The dump is unchanged when both are (docs/architecture.md#change-detection):
    a write anywhere in a file moves its mtime, which costs a ``stat`` per file where hashing
    every byte would read the whole dump every night (bench/HISTORY.md)."""
    files = _listing(Path(root))
    return f"{_content_key(Path(root), files)}:{_stamp_key(files)}"


def unchanged(recorded: str | None, now: str) -> bool:
    """Whether a dump whose fingerprint is ``now`` is the one recorded. A record written before
    fingerprints had a stamp holds the content key alone: it is compared with that."""
    if not recorded:
        return False
    if ":" not in recorded:
        return recorded == now.split(":", 1)[0]
    return recorded == now


def same_content(recorded: str | None, now: str) -> bool:
    """Whether two fingerprints are of the same dump's content (names, sizes, edges), whatever
    the files' modification times."""
    return bool(recorded) and recorded.split(":", 1)[0] == now.split(":", 1)[0]


def run_id(collection_start_us: int | None, metadata: dict[str, str]) -> str:
    """Collection start (UTC) plus a hash of the control files: the same dump gets the
    same id wherever it is mounted, and two dumps started the same second differ."""
    h = hashlib.sha256()
    for name in sorted(metadata):
        h.update(name.encode() + b"\0" + metadata[name].encode() + b"\0")
    if collection_start_us is not None:
        stamp = datetime.fromtimestamp(collection_start_us / 1e6, UTC).strftime("%Y%m%dT%H%M%S")
    else:
        stamp = "nostart"
    return f"{stamp}-{h.hexdigest()[:8]}"
